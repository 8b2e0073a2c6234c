package facts

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/google/pprof/profile"
	"github.com/perfdoctor/perfdoctor/evidence"
)

// Diff compares two profiles of one kind, A (before) and B (after), by
// each function's share of its profile's total, so profiles of different
// lengths or loads compare.
type Diff struct {
	Tool string   `json:"tool"`
	Kind string   `json:"kind"`
	Type string   `json:"sample_type"`
	Unit string   `json:"unit"`
	A    DiffSide `json:"a"`
	B    DiffSide `json:"b"`
	// Growers and Shrinkers are the functions whose flat or cumulative
	// share changed most (at most DiffTop each); New and Vanished are
	// functions absent from one side and at least HotShare (cumulative) on
	// the other.
	Growers   []FuncDelta `json:"growers"`
	Shrinkers []FuncDelta `json:"shrinkers"`
	New       []FuncDelta `json:"new"`
	Vanished  []FuncDelta `json:"vanished"`
	// MaxGrowth is the largest rise of any function's flat or cumulative
	// share, as a fraction (0.05 = 5 percentage points);
	// --fail-on-regression reads it.
	MaxGrowth     float64 `json:"max_growth"`
	MaxGrowthFunc string  `json:"max_growth_function,omitempty"`
	// Regression is set by CheckRegression when MaxGrowth exceeds its limit.
	Regression string `json:"regression,omitempty"`
	// Functions is every function of either side, by largest change first.
	Functions []FuncDelta `json:"functions"`

	// StacksA and StacksB are the two profiles flattened, for a
	// differential flame graph.
	StacksA, StacksB *evidence.Stacks `json:"-"`
}

// DiffSide describes one of the two profiles.
type DiffSide struct {
	Source   string  `json:"source"`
	Total    int64   `json:"total"`
	Stacks   int     `json:"stacks"`
	Duration float64 `json:"duration_seconds,omitempty"`
}

// FuncDelta is one function's flat (leaf) and cumulative (on the stack)
// share on each side, and their change (B - A).
type FuncDelta struct {
	Function  string  `json:"function"`
	FlatA     float64 `json:"flat_a"`
	FlatB     float64 `json:"flat_b"`
	FlatDelta float64 `json:"flat_delta"`
	CumA      float64 `json:"cum_a"`
	CumB      float64 `json:"cum_b"`
	CumDelta  float64 `json:"cum_delta"`
}

// Diff tuning.
const (
	DiffTop  = 15    // rows per table
	HotShare = 0.01  // a new or vanished function must reach 1% to be listed
	MinDelta = 0.001 // changes under 0.1 points are noise, not growth
)

// CompareEvidence diffs the profiles of one kind in two evidence sets. An
// empty kind picks cpu when both have it, else the only kind they share.
func CompareEvidence(a, b *evidence.Evidence, kind string) (*Diff, error) {
	if kind == "" {
		var common []string
		for k := range a.Profiles {
			if b.Profiles[k] != nil {
				common = append(common, string(k))
			}
		}
		sort.Strings(common)
		switch {
		case a.Profiles[evidence.CPU] != nil && b.Profiles[evidence.CPU] != nil:
			kind = string(evidence.CPU)
		case len(common) == 1:
			kind = common[0]
		case len(common) == 0:
			return nil, fmt.Errorf("the two inputs have no profile kind in common (A: %s; B: %s)", kinds(a), kinds(b))
		default:
			return nil, fmt.Errorf("the inputs share several profile kinds (%s) and no CPU profile: choose one with --kind", strings.Join(common, ", "))
		}
	}
	pa, pb := a.Profile(evidence.Kind(kind)), b.Profile(evidence.Kind(kind))
	switch {
	case pa == nil && pb == nil:
		return nil, fmt.Errorf("neither input has a %s profile (A: %s; B: %s)", kind, kinds(a), kinds(b))
	case pa == nil:
		return nil, fmt.Errorf("A has no %s profile (it has: %s)", kind, kinds(a))
	case pb == nil:
		return nil, fmt.Errorf("B has no %s profile (it has: %s)", kind, kinds(b))
	}
	d, err := Compare(pa, pb, evidence.Kind(kind))
	if err != nil {
		return nil, err
	}
	d.A.Source = strings.Join(a.Sources, ", ")
	d.B.Source = strings.Join(b.Sources, ", ")
	return d, nil
}

func kinds(ev *evidence.Evidence) string {
	var ks []string
	for k := range ev.Profiles {
		ks = append(ks, string(k))
	}
	if len(ks) == 0 {
		return "no profiles"
	}
	sort.Strings(ks)
	return strings.Join(ks, ", ")
}

// Compare diffs two profiles of the given kind.
func Compare(a, b *profile.Profile, kind evidence.Kind) (*Diff, error) {
	typ := evidence.ShownSampleType(kind, a)
	sa, sb := evidence.NewStacks(a, typ), evidence.NewStacks(b, typ)
	if sa == nil || sb == nil {
		return nil, fmt.Errorf("the two %s profiles do not share the sample type %q", kind, typ)
	}
	if sa.Total <= 0 || sb.Total <= 0 {
		return nil, fmt.Errorf("a %s profile has no samples (A total %d, B total %d)", kind, sa.Total, sb.Total)
	}
	d := &Diff{Kind: string(kind), Type: sa.Type, Unit: sa.Unit,
		A: DiffSide{Total: sa.Total, Stacks: len(sa.Samples), Duration: float64(a.DurationNanos) / 1e9},
		B: DiffSide{Total: sb.Total, Stacks: len(sb.Samples), Duration: float64(b.DurationNanos) / 1e9},
	}
	fa, fb := funcShares(sa), funcShares(sb)
	all := map[string]*FuncDelta{}
	get := func(fn string) *FuncDelta {
		fd := all[fn]
		if fd == nil {
			fd = &FuncDelta{Function: fn}
			all[fn] = fd
		}
		return fd
	}
	for fn, s := range fa {
		fd := get(fn)
		fd.FlatA, fd.CumA = s[0], s[1]
	}
	for fn, s := range fb {
		fd := get(fn)
		fd.FlatB, fd.CumB = s[0], s[1]
	}
	for _, fd := range all {
		fd.FlatDelta = fd.FlatB - fd.FlatA
		fd.CumDelta = fd.CumB - fd.CumA
		d.Functions = append(d.Functions, *fd)
	}
	change := func(f FuncDelta) float64 { return math.Max(math.Abs(f.FlatDelta), math.Abs(f.CumDelta)) }
	sort.Slice(d.Functions, func(i, j int) bool {
		ci, cj := change(d.Functions[i]), change(d.Functions[j])
		if ci != cj {
			return ci > cj
		}
		return d.Functions[i].Function < d.Functions[j].Function
	})
	pick := func(keep func(FuncDelta) bool, less func(x, y FuncDelta) bool) []FuncDelta {
		out := []FuncDelta{}
		for _, f := range d.Functions {
			if keep(f) {
				out = append(out, f)
			}
		}
		sort.SliceStable(out, func(i, j int) bool { return less(out[i], out[j]) })
		return out[:min(len(out), DiffTop)]
	}
	grow := func(f FuncDelta) float64 { return math.Max(f.FlatDelta, f.CumDelta) }
	shrink := func(f FuncDelta) float64 { return math.Min(f.FlatDelta, f.CumDelta) }
	d.Growers = pick(func(f FuncDelta) bool { return grow(f) >= MinDelta },
		func(x, y FuncDelta) bool { return grow(x) > grow(y) })
	d.Shrinkers = pick(func(f FuncDelta) bool { return shrink(f) <= -MinDelta },
		func(x, y FuncDelta) bool { return shrink(x) < shrink(y) })
	d.New = pick(func(f FuncDelta) bool { return f.CumA == 0 && f.CumB >= HotShare },
		func(x, y FuncDelta) bool { return x.CumB > y.CumB })
	d.Vanished = pick(func(f FuncDelta) bool { return f.CumB == 0 && f.CumA >= HotShare },
		func(x, y FuncDelta) bool { return x.CumA > y.CumA })
	if len(d.Growers) > 0 {
		d.MaxGrowth, d.MaxGrowthFunc = grow(d.Growers[0]), d.Growers[0].Function
	}
	d.StacksA, d.StacksB = sa, sb
	return d, nil
}

// funcShares returns each function's flat and cumulative share, counting
// a function once per sample however often it recurses.
func funcShares(st *evidence.Stacks) map[string][2]float64 {
	flat := map[string]int64{}
	cum := map[string]int64{}
	seen := map[string]int{}
	for i, sm := range st.Samples {
		for j, id := range sm.Frames {
			fn := st.Frames[id].Func
			if j == 0 {
				flat[fn] += sm.Value
			}
			if seen[fn] != i+1 {
				seen[fn] = i + 1
				cum[fn] += sm.Value
			}
		}
	}
	out := make(map[string][2]float64, len(cum))
	t := float64(st.Total)
	for fn, c := range cum {
		out[fn] = [2]float64{float64(flat[fn]) / t, float64(c) / t}
	}
	return out
}

// CheckRegression records and reports whether any function's flat or
// cumulative share grew by more than limit (a fraction: 0.05 for 5
// percentage points).
func (d *Diff) CheckRegression(limit float64) bool {
	if d.MaxGrowth <= limit {
		return false
	}
	d.Regression = fmt.Sprintf("regression: %s grew by %.1f percentage points of %s share, more than the %.1f allowed",
		evidence.ShortFunc(d.MaxGrowthFunc), d.MaxGrowth*100, d.Kind, limit*100)
	return true
}
