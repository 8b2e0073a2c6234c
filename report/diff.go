package report

import (
	"bufio"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"sort"
	"strings"

	"github.com/google/pprof/profile"

	"github.com/perfdoctor/perfdoctor/evidence"
	"github.com/perfdoctor/perfdoctor/internal/human"
	"github.com/perfdoctor/perfdoctor/rules"
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

	tree *flameTree
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
	minDelta = 0.001 // changes under 0.1 points are noise, not growth
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
	typ := sampleTypeFor(kind, a)
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
	d.Growers = pick(func(f FuncDelta) bool { return grow(f) >= minDelta },
		func(x, y FuncDelta) bool { return grow(x) > grow(y) })
	d.Shrinkers = pick(func(f FuncDelta) bool { return shrink(f) <= -minDelta },
		func(x, y FuncDelta) bool { return shrink(x) < shrink(y) })
	d.New = pick(func(f FuncDelta) bool { return f.CumA == 0 && f.CumB >= HotShare },
		func(x, y FuncDelta) bool { return x.CumB > y.CumB })
	d.Vanished = pick(func(f FuncDelta) bool { return f.CumB == 0 && f.CumA >= HotShare },
		func(x, y FuncDelta) bool { return x.CumA > y.CumA })
	if len(d.Growers) > 0 {
		d.MaxGrowth, d.MaxGrowthFunc = grow(d.Growers[0]), d.Growers[0].Function
	}
	ss := newStackSet(2)
	ss.add(sa, 0)
	ss.add(sb, 1)
	d.tree = ss.build().encode(ss, MinFlameShare)
	d.tree.Kind, d.tree.Label = string(kind), "A → B "+string(kind)
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
		rules.ShortFunc(d.MaxGrowthFunc), d.MaxGrowth*100, d.Kind, limit*100)
	return true
}

// Headline is the diff's one-line verdict.
func (d *Diff) Headline() string {
	if len(d.Growers) == 0 && len(d.Shrinkers) == 0 {
		return fmt.Sprintf("No function's share of %s changed by more than %.1f points from A to B.", d.Kind, minDelta*100)
	}
	if len(d.Growers) == 0 {
		s := d.Shrinkers[0]
		return fmt.Sprintf("Nothing grew; the biggest shrinker is %s, %s → %s of %s (%s flat).",
			rules.ShortFunc(s.Function), human.Percent(s.FlatA), human.Percent(s.FlatB), d.Kind, ppString(s.FlatDelta))
	}
	g := d.Growers[0]
	if g.CumDelta > g.FlatDelta {
		return fmt.Sprintf("The biggest grower is %s: %s → %s of %s with its callees (%s), flat %s → %s.",
			rules.ShortFunc(g.Function), human.Percent(g.CumA), human.Percent(g.CumB), d.Kind, ppString(g.CumDelta),
			human.Percent(g.FlatA), human.Percent(g.FlatB))
	}
	return fmt.Sprintf("The biggest grower is %s: %s → %s of %s flat (%s).",
		rules.ShortFunc(g.Function), human.Percent(g.FlatA), human.Percent(g.FlatB), d.Kind, ppString(g.FlatDelta))
}

func ppString(v float64) string { return fmt.Sprintf("%+.1f pp", v*100) }

func (d *Diff) describe() string {
	side := func(name string, s DiffSide) string {
		v := fmt.Sprintf("%s = %s (total %s", name, s.Source, humanValue(float64(s.Total), d.Unit))
		if s.Duration > 0 {
			v += fmt.Sprintf(" over %.0fs", s.Duration)
		}
		return v + fmt.Sprintf(", %d stacks)", s.Stacks)
	}
	return fmt.Sprintf("%s profiles (%s): %s; %s. Shares are of each profile's own total.", d.Kind, d.Type, side("A", d.A), side("B", d.B))
}

func humanValue(v float64, unit string) string {
	switch unit {
	case "nanoseconds":
		return fmt.Sprintf("%.2fs", v/1e9)
	case "bytes":
		return human.Bytes(uint64(max(v, 0)))
	}
	return human.Number(v)
}

// DiffFormats maps each diff output format to its writer.
var DiffFormats = map[string]func(io.Writer, *Diff) error{
	"text":     WriteDiffText,
	"json":     WriteDiffJSON,
	"html":     WriteDiffHTML,
	"markdown": WriteDiffMarkdown,
}

// DiffFormatNames lists the diff formats for help texts and errors.
func DiffFormatNames() string {
	names := make([]string, 0, len(DiffFormats))
	for n := range DiffFormats {
		names = append(names, n)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

type diffSection struct {
	ID, Title string
	Rows      []FuncDelta
}

func (d *Diff) sections() []diffSection {
	return []diffSection{
		{"growers", "Biggest growers (share of the total, A → B)", d.Growers},
		{"shrinkers", "Biggest shrinkers", d.Shrinkers},
		{"new", fmt.Sprintf("New hot spots (absent from A, at least %s of B)", human.Percent(HotShare)), d.New},
		{"vanished", fmt.Sprintf("Vanished hot spots (at least %s of A, absent from B)", human.Percent(HotShare)), d.Vanished},
	}
}

// WriteDiffText writes the diff for a terminal.
func WriteDiffText(w io.Writer, d *Diff) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "perfdoctor diff: %s\n  %s\n", d.Headline(), d.describe())
	if d.Regression != "" {
		fmt.Fprintf(bw, "  %s\n", d.Regression)
	}
	for _, s := range d.sections() {
		fmt.Fprintf(bw, "\n%s:\n", s.Title)
		if len(s.Rows) == 0 {
			fmt.Fprintln(bw, "  none")
			continue
		}
		fmt.Fprintf(bw, "  %9s  %6s  %6s  %9s  %6s  %6s  %s\n", "Δ flat", "flat A", "flat B", "Δ cum", "cum A", "cum B", "function")
		for _, f := range s.Rows {
			fmt.Fprintf(bw, "  %9s  %6s  %6s  %9s  %6s  %6s  %s\n", ppString(f.FlatDelta), human.Percent(f.FlatA), human.Percent(f.FlatB),
				ppString(f.CumDelta), human.Percent(f.CumA), human.Percent(f.CumB), rules.ShortFunc(f.Function))
		}
	}
	return bw.Flush()
}

// WriteDiffJSON writes the diff as indented JSON.
func WriteDiffJSON(w io.Writer, d *Diff) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(d)
}

// WriteDiffMarkdown writes the diff's tables for a pull request.
func WriteDiffMarkdown(w io.Writer, d *Diff) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "### perfdoctor diff\n\n%s\n\n%s\n", d.Headline(), mdText(d.describe()))
	if d.Regression != "" {
		fmt.Fprintf(bw, "\n> **%s**\n", d.Regression)
	}
	for _, s := range d.sections() {
		if len(s.Rows) == 0 {
			continue
		}
		fmt.Fprintf(bw, "\n#### %s\n\n| function | flat A | flat B | Δ flat | cum A | cum B | Δ cum |\n|---|---:|---:|---:|---:|---:|---:|\n", s.Title)
		for _, f := range s.Rows {
			fmt.Fprintf(bw, "| `%s` | %s | %s | %s | %s | %s | %s |\n", mdCell(rules.ShortFunc(f.Function)), human.Percent(f.FlatA), human.Percent(f.FlatB),
				ppString(f.FlatDelta), human.Percent(f.CumA), human.Percent(f.CumB), ppString(f.CumDelta))
		}
	}
	return bw.Flush()
}

// WriteDiffHTML writes a self-contained page: the tables of the biggest
// changes and a differential flame graph (growth red, shrinkage blue).
func WriteDiffHTML(w io.Writer, d *Diff) error {
	p := &htmlPage{
		Title:    "perfdoctor diff",
		Report:   &Report{Tool: cmp.Or(d.Tool, "perfdoctor"), Inputs: Inputs{Sources: []string{"A = " + d.A.Source, "B = " + d.B.Source}}},
		Verdict:  d.Headline(),
		Describe: d.describe(),
		Diff:     d,
		DiffRows: d.sections(),
	}
	data := pageData{Diff: true, Marks: []mark{}}
	if d.tree != nil {
		data.Profiles = []*flameTree{d.tree}
	}
	return renderPage(w, p, data)
}
