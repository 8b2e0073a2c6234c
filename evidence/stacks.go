package evidence

import (
	"sort"
	"strings"

	"github.com/google/pprof/profile"
)

// Frame is one function activation in a stack, after inlining is expanded.
type Frame struct {
	Func string `json:"function"`
	File string `json:"file,omitempty"`
	Line int64  `json:"line,omitempty"`
}

// Sample is one stack with its value in the chosen sample type. Frames
// holds indexes into Stacks.Frames, from the leaf (where the time was spent)
// to the root.
type Sample struct {
	Frames []int32
	Value  int64
}

// Stacks is a profile flattened for the questions rules ask: "what share of
// the total has a frame matching X on its stack", "which sites are hottest".
// Frames and function names are interned: profiles repeat the same few
// thousand functions across hundreds of thousands of frames, so a matcher
// runs once per distinct function and a sample costs 4 bytes a frame.
type Stacks struct {
	Samples   []Sample
	Frames    []Frame  // distinct frames (function, file, line)
	Funcs     []string // distinct function names
	frameFunc []int32  // Frames[i].Func is Funcs[frameFunc[i]]
	Total     int64
	Type      string // sample type, e.g. "cpu" or "alloc_objects"
	Unit      string // e.g. "nanoseconds", "count"
}

// NewStacks flattens p using the sample type named typ (e.g. "cpu",
// "alloc_objects"); an empty typ picks the profile's default sample type,
// or its last one, as pprof does. It returns nil if p has no such type.
func NewStacks(p *profile.Profile, typ string) *Stacks {
	if p == nil {
		return nil
	}
	idx := sampleIndex(p, typ)
	if idx < 0 {
		return nil
	}
	st := &Stacks{Type: p.SampleType[idx].Type, Unit: p.SampleType[idx].Unit}
	funcID := map[string]int32{}
	frameID := map[Frame]int32{}
	byLoc := map[*profile.Location][]int32{}
	expand := func(loc *profile.Location) []int32 {
		if ids, ok := byLoc[loc]; ok {
			return ids
		}
		var ids []int32
		// Location.Line lists inlined calls innermost first.
		for _, ln := range loc.Line {
			if ln.Function == nil {
				continue
			}
			f := Frame{Func: ln.Function.Name, File: ln.Function.Filename, Line: ln.Line}
			id, ok := frameID[f]
			if !ok {
				fid, ok := funcID[f.Func]
				if !ok {
					fid = int32(len(st.Funcs))
					funcID[f.Func] = fid
					st.Funcs = append(st.Funcs, f.Func)
				}
				id = int32(len(st.Frames))
				frameID[f] = id
				st.Frames = append(st.Frames, f)
				st.frameFunc = append(st.frameFunc, fid)
			}
			ids = append(ids, id)
		}
		byLoc[loc] = ids
		return ids
	}
	total := 0
	for _, s := range p.Sample {
		for _, loc := range s.Location {
			total += len(expand(loc))
		}
	}
	backing := make([]int32, 0, total) // one allocation for every sample's frames
	st.Samples = make([]Sample, 0, len(p.Sample))
	for _, s := range p.Sample {
		v := s.Value[idx]
		if v == 0 {
			continue
		}
		start := len(backing)
		for _, loc := range s.Location {
			backing = append(backing, byLoc[loc]...)
		}
		st.Samples = append(st.Samples, Sample{Frames: backing[start:len(backing):len(backing)], Value: v})
		st.Total += v
	}
	return st
}

func sampleIndex(p *profile.Profile, typ string) int {
	if len(p.SampleType) == 0 {
		return -1
	}
	if typ == "" {
		typ = p.DefaultSampleType
		if typ == "" {
			return len(p.SampleType) - 1
		}
	}
	for i, st := range p.SampleType {
		if st.Type == typ {
			return i
		}
	}
	return -1
}

// Matcher decides whether a function, by its full name, belongs to a family
// of interest.
type Matcher func(fn string) bool

// FuncPrefix matches functions whose name starts with any of the prefixes,
// also when the library is vendored into the service
// ("example.com/svc/vendor/github.com/..."). Families are matched by prefix
// because runtime and library internals gain suffixes (".func2", "1",
// "Fast") across versions.
func FuncPrefix(prefixes ...string) Matcher {
	// The vendored forms are built once: matchers run once per distinct
	// function per rule, and building them per call was a quarter of a
	// fleet diagnosis' CPU.
	vendored := make([]string, len(prefixes))
	for i, p := range prefixes {
		vendored[i] = "/vendor/" + p
	}
	return func(fn string) bool {
		inVendor := strings.Contains(fn, "/vendor/")
		for i, p := range prefixes {
			if strings.HasPrefix(fn, p) || (inVendor && strings.Contains(fn, vendored[i])) {
				return true
			}
		}
		return false
	}
}

// Any matches a function that any of the matchers matches.
func Any(ms ...Matcher) Matcher {
	return func(fn string) bool {
		for _, m := range ms {
			if m(fn) {
				return true
			}
		}
		return false
	}
}

// FrameHits runs m once per distinct function and returns, per frame (index
// into Frames), whether its function matched.
func (s *Stacks) FrameHits(m Matcher) []bool {
	funcHit := make([]bool, len(s.Funcs))
	for i, fn := range s.Funcs {
		funcHit[i] = m(fn)
	}
	hit := make([]bool, len(s.Frames))
	for i, fid := range s.frameFunc {
		hit[i] = funcHit[fid]
	}
	return hit
}

// Has returns a predicate telling whether a sample has a matching frame.
func (s *Stacks) Has(m Matcher) func(Sample) bool {
	if s == nil {
		return func(Sample) bool { return false }
	}
	hit := s.FrameHits(m)
	return func(sm Sample) bool {
		for _, id := range sm.Frames {
			if hit[id] {
				return true
			}
		}
		return false
	}
}

// Share is the fraction of the total whose stack contains a matching frame
// (pprof's "cum" for a family of functions, counted once per sample).
func (s *Stacks) Share(m Matcher) float64 {
	return s.ShareWhere(s.Has(m))
}

// ShareWhere is the fraction of the total in samples the predicate accepts.
func (s *Stacks) ShareWhere(keep func(Sample) bool) float64 {
	if s == nil || s.Total == 0 {
		return 0
	}
	var v int64
	for _, sm := range s.Samples {
		if keep(sm) {
			v += sm.Value
		}
	}
	return float64(v) / float64(s.Total)
}

// First returns a pick function choosing a sample's leaf-most frame that m
// matches (e.g. the first application frame above the allocator), or nil.
func (s *Stacks) First(m Matcher) func(Sample) *Frame {
	if s == nil {
		return func(Sample) *Frame { return nil }
	}
	hit := s.FrameHits(m)
	return func(sm Sample) *Frame {
		for _, id := range sm.Frames {
			if hit[id] {
				return &s.Frames[id]
			}
		}
		return nil
	}
}

// CallerOf returns a pick function choosing the code that called into a
// family: in a sample, the first frame matching app rootward of the
// outermost (root-most) frame matching family, or nil. Starting from the
// outermost frame skips callbacks and helpers the family itself calls (a
// MarshalJSON method under json.Marshal, a circuit breaker inside a Kafka
// client).
func (s *Stacks) CallerOf(family, app Matcher) func(Sample) *Frame {
	if s == nil {
		return func(Sample) *Frame { return nil }
	}
	inFamily := s.FrameHits(family)
	isApp := s.FrameHits(func(fn string) bool { return app(fn) && !family(fn) })
	return func(sm Sample) *Frame {
		outer := -1
		for i, id := range sm.Frames {
			if inFamily[id] {
				outer = i
			}
		}
		if outer < 0 {
			return nil
		}
		for _, id := range sm.Frames[outer+1:] {
			if isApp[id] {
				return &s.Frames[id]
			}
		}
		return nil
	}
}

// Matched lists the distinct functions that m matches, most expensive
// (by cumulative value) first, at most n of them.
func (s *Stacks) Matched(m Matcher, n int) []string {
	if s == nil {
		return nil
	}
	hit := s.FrameHits(m)
	cost := make([]int64, len(s.Funcs))
	lastSample := make([]int, len(s.Funcs)) // 1-based sample index, to count a function once per sample
	for i, sm := range s.Samples {
		for _, id := range sm.Frames {
			if fid := s.frameFunc[id]; hit[id] && lastSample[fid] != i+1 {
				lastSample[fid] = i + 1
				cost[fid] += sm.Value
			}
		}
	}
	var ids []int
	for id, c := range cost {
		if c > 0 {
			ids = append(ids, id)
		}
	}
	sort.Slice(ids, func(i, j int) bool {
		if cost[ids[i]] != cost[ids[j]] {
			return cost[ids[i]] > cost[ids[j]]
		}
		return s.Funcs[ids[i]] < s.Funcs[ids[j]]
	})
	names := make([]string, 0, min(n, len(ids)))
	for _, id := range ids[:min(n, len(ids))] {
		names = append(names, s.Funcs[id])
	}
	return names
}

// Site is a place in the code with its share of a profile's total.
type Site struct {
	Frame
	Flat  float64 `json:"flat"`  // share with this site as the attributed frame
	Value int64   `json:"value"` // in the profile's unit
}

// TopSites attributes each accepted sample to one frame chosen by pick (nil
// to skip the sample) and returns the n sites with the largest totals.
// Sites are keyed by function and line.
func (s *Stacks) TopSites(n int, pick func(Sample) *Frame) []Site {
	if s == nil || s.Total == 0 {
		return nil
	}
	type key struct {
		fn   string
		line int64
	}
	acc := map[key]*Site{}
	for _, sm := range s.Samples {
		f := pick(sm)
		if f == nil {
			continue
		}
		k := key{f.Func, f.Line}
		site := acc[k]
		if site == nil {
			site = &Site{Frame: *f}
			acc[k] = site
		}
		site.Value += sm.Value
	}
	out := make([]Site, 0, len(acc))
	for _, site := range acc {
		site.Flat = float64(site.Value) / float64(s.Total)
		out = append(out, *site)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Value != out[j].Value {
			return out[i].Value > out[j].Value
		}
		return out[i].Func < out[j].Func
	})
	if len(out) > n {
		out = out[:n]
	}
	return out
}

// IsRuntime reports whether a function belongs to the Go runtime proper.
func IsRuntime(fn string) bool {
	return strings.HasPrefix(fn, "runtime.") || strings.HasPrefix(fn, "runtime/") ||
		strings.HasPrefix(fn, "internal/runtime/") || strings.HasPrefix(fn, "internal/abi.") ||
		goAsmHelpers[fn] == "runtime"
}

// goAsmHelpers are Go's assembly routines whose symbols carry no package
// (static TEXT symbols, name<>), by the package they are in: the runtime's
// write barrier and map hash, internal/bytealg's comparison and search
// loops. Go 1.26's profiles show them as leaves right under the Go code
// calling them (in the casebook's recordings aeshashbody up to 2.8% of the
// CPU, memeqbody up to 12%), where a dotless name would otherwise read as
// the program's own.
var goAsmHelpers = map[string]string{
	"gcWriteBarrier": "runtime", "aeshashbody": "runtime",
	"memeqbody": "internal/bytealg", "cmpbody": "internal/bytealg", "indexbytebody": "internal/bytealg",
	"countbody": "internal/bytealg", "indexbody": "internal/bytealg",
}

// IsStdlib reports whether a Go function name belongs to the standard
// library: its import path's first element has no dot ("net/http", "sync"),
// except "main", which is the application.
func IsStdlib(fn string) bool {
	if goAsmHelpers[fn] != "" {
		return true
	}
	path := PackagePath(fn)
	if path == "" || path == "main" {
		return false
	}
	first, _, _ := strings.Cut(path, "/")
	return !strings.Contains(first, ".")
}

// PackagePath extracts the import path from a symbol such as
// "github.com/x/y/z.(*T).Method" or "net/http.(*conn).serve".
func PackagePath(fn string) string {
	slash := strings.LastIndexByte(fn, '/')
	dot := strings.IndexByte(fn[slash+1:], '.')
	if dot < 0 {
		return ""
	}
	return fn[:slash+1+dot]
}

// shownTypes is the sample type shown first for each profile kind, in
// flame graphs and diffs: time on CPU, bytes allocated or in use, time
// waited, goroutines.
var shownTypes = map[Kind]string{
	CPU: "cpu", Allocs: "alloc_space", Heap: "inuse_space", Mutex: "delay", Block: "delay", Goroutine: "goroutine",
}

// ShownSampleType is the sample type a profile of kind k is shown in, or
// "" when it lacks it (NewStacks then takes the profile's default).
func ShownSampleType(k Kind, p *profile.Profile) string {
	t, ok := shownTypes[k]
	if !ok || p == nil {
		return ""
	}
	for _, st := range p.SampleType {
		if st.Type == t {
			return t
		}
	}
	return ""
}

// ShortFunc drops the import path's directories: "github.com/a/b.(*T).M"
// becomes "b.(*T).M".
func ShortFunc(fn string) string {
	if i := strings.LastIndexByte(fn, '/'); i >= 0 {
		return fn[i+1:]
	}
	return fn
}
