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

// Sample is one stack with its value in the chosen sample type. Frames run
// from the leaf (where the time was spent) to the root.
type Sample struct {
	Frames []Frame
	Value  int64
}

// Stacks is a profile flattened for the questions rules ask: "what share of
// the total has a frame matching X on its stack", "which sites are hottest".
type Stacks struct {
	Samples []Sample
	Total   int64
	Type    string // sample type, e.g. "cpu" or "alloc_objects"
	Unit    string // e.g. "nanoseconds", "count"
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
	st.Samples = make([]Sample, 0, len(p.Sample))
	for _, s := range p.Sample {
		v := s.Value[idx]
		if v == 0 {
			continue
		}
		var frames []Frame
		for _, loc := range s.Location {
			// Location.Line lists inlined calls innermost first.
			for _, ln := range loc.Line {
				if ln.Function == nil {
					continue
				}
				frames = append(frames, Frame{Func: ln.Function.Name, File: ln.Function.Filename, Line: ln.Line})
			}
		}
		st.Samples = append(st.Samples, Sample{Frames: frames, Value: v})
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

// Matcher decides whether a frame belongs to a family of interest.
type Matcher func(Frame) bool

// FuncPrefix matches frames whose function name starts with any of the
// prefixes. Families are matched by prefix because runtime and library
// internals gain suffixes (".func2", "1", "Fast") across versions.
func FuncPrefix(prefixes ...string) Matcher {
	return func(f Frame) bool {
		for _, p := range prefixes {
			if strings.HasPrefix(f.Func, p) {
				return true
			}
		}
		return false
	}
}

// Any matches a frame that any of the matchers matches.
func Any(ms ...Matcher) Matcher {
	return func(f Frame) bool {
		for _, m := range ms {
			if m(f) {
				return true
			}
		}
		return false
	}
}

// Share is the fraction of the total whose stack contains a matching frame
// (pprof's "cum" for a family of functions, counted once per sample).
func (s *Stacks) Share(m Matcher) float64 {
	return s.ShareWhere(func(sm Sample) bool { return sm.Has(m) })
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

// Has reports whether any frame of the sample matches.
func (sm Sample) Has(m Matcher) bool {
	for _, f := range sm.Frames {
		if m(f) {
			return true
		}
	}
	return false
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

// FirstFrame returns a pick function choosing the leaf-most frame that m
// matches, e.g. the first application frame above the allocator.
func FirstFrame(m Matcher) func(Sample) *Frame {
	return func(sm Sample) *Frame {
		for i := range sm.Frames {
			if m(sm.Frames[i]) {
				return &sm.Frames[i]
			}
		}
		return nil
	}
}

// IsRuntime reports whether a function belongs to the Go runtime proper.
func IsRuntime(fn string) bool {
	return strings.HasPrefix(fn, "runtime.") || strings.HasPrefix(fn, "runtime/") ||
		strings.HasPrefix(fn, "internal/runtime/") || strings.HasPrefix(fn, "internal/abi.")
}

// IsStdlib reports whether a Go function name belongs to the standard
// library: its import path's first element has no dot ("net/http", "sync"),
// except "main", which is the application.
func IsStdlib(fn string) bool {
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
