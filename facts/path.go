package facts

import (
	"sort"
	"strings"

	"github.com/perfdoctor/perfdoctor/internal/human"

	"github.com/perfdoctor/perfdoctor/evidence"
)

// Path is the widest subtree of the CPU profile rooted in the program's own
// code: the entry where a unit of work starts in the program (a handler, a
// worker's loop), the chain of calls down to where the cost spreads, and
// what the chain's last function calls. The leaves under it (a sort's
// comparisons, a hash) are the cost of what the subtree does.
type Path struct {
	// Chain runs from the entry (Chain[0]) to the function where the cost
	// spreads over several callees or stays in the function itself.
	Chain []Step
	// Callees are what the chain's last function calls, the costliest
	// first; its own time is not among them.
	Callees []Step
	// Share is the subtree's share of all CPU samples (the entry's).
	Share float64
	// End is the share of all CPU under the chain's last function.
	End float64
	// Own says the entry is the program's own code; false when the
	// program's own code holds too little of the CPU to start from
	// (MinOwn) and the path starts in the libraries or framework it runs
	// on (a Spring application whose controllers are trivial).
	Own bool

	st    *evidence.Stacks
	own   []bool
	chain []string // the functions of Chain, entry first
	java  bool     // names are Java methods
}

// Step is one function on a path with its cumulative share of all CPU.
type Step struct {
	Func  string
	Share float64
	// Own says the function is the program's own code.
	Own bool
}

// Spread is the part of its caller's cost from which one callee continues
// a chain: below it the cost spreads over several callees (or stays in the
// caller), and that is where the path ends. On the pushgateway a push's
// chain holds 98-99.9% from call to call (DiskMetricStore.loop ->
// checkWriteRequest -> Gatherers.Gather) and spreads at Gather (its two
// callees hold 49% and 47%); on H2 the lookup's chain holds above 99% down
// to the row fetch, whose callees hold 70% and 27%.
const Spread = 0.75

// MinOwn is the share of CPU the program's own widest subtree must hold
// for the dominant path to start in it; below it the path starts in the
// application code the program runs on.
const MinOwn = 0.05

// DominantPath is the program's widest subtree in the CPU profile.
var DominantPath = &Fact[*Path]{
	Name: "dominant-path",
	Doc: "The widest subtree of the CPU profile rooted in the program's own code: its entry (the outermost own frame of the " +
		"most samples), the chain of single callees down to where the cost spreads, and what the chain's end calls.",
	Requires: []Key{CPUStacks, Program},
	Compute: func(p *Pass) *Path {
		st := Get(p, CPUStacks)
		return Get(p, Program).PathOf(st, nil)
	},
}

// PathOf is the widest subtree among the samples keep accepts (all when
// nil): rooted in the program's own code, or, when that holds less than
// MinOwn of the CPU, in any application code.
func (pc *ProgramCode) PathOf(st *evidence.Stacks, keep func(evidence.Sample) bool) *Path {
	if p := PathOf(st, pc.Frames(st), keep); p != nil && p.Share >= MinOwn {
		p.Own, p.java = true, pc.jvm
		return p
	}
	if st == nil {
		return nil
	}
	app := make([]bool, len(st.Frames))
	for i, f := range st.Frames {
		app[i] = pc.Application(f)
	}
	p := PathOf(st, app, keep)
	if p != nil {
		p.java = pc.jvm
	}
	return p
}

// PathOf finds the widest subtree rooted in the program's own code among
// the samples keep accepts (all when nil), own marking st's frames that are
// the program's; nil when no kept sample has an own frame.
func PathOf(st *evidence.Stacks, own []bool, keep func(evidence.Sample) bool) *Path {
	if st == nil || st.Total <= 0 {
		return nil
	}
	// Each sample's entry is its outermost own frame; the subtree of the
	// entry function with the most samples is the widest.
	type at struct {
		sample int
		pos    int // index in Frames of the chain's current function
	}
	byEntry := map[string][]at{}
	value := map[string]int64{}
	for i, s := range st.Samples {
		if keep != nil && !keep(s) {
			continue
		}
		if pos := entryPos(s, own); pos >= 0 {
			fn := st.Frames[s.Frames[pos]].Func
			byEntry[fn] = append(byEntry[fn], at{i, pos})
			value[fn] += s.Value
		}
	}
	if len(byEntry) == 0 {
		return nil
	}
	entry := ""
	for fn, v := range value {
		if entry == "" || v > value[entry] || v == value[entry] && fn < entry {
			entry = fn
		}
	}
	share := func(v int64) float64 { return float64(v) / float64(st.Total) }
	p := &Path{st: st, own: own, Share: share(value[entry])}
	cur, curValue := byEntry[entry], value[entry]
	p.Chain = append(p.Chain, Step{Func: entry, Share: share(curValue), Own: true})
	p.chain = append(p.chain, entry)
	for {
		// Tally the callees of the chain's end (the next frame leafward);
		// a sample ending at it is its own time.
		next := map[string]int64{}
		for _, a := range cur {
			if a.pos > 0 {
				next[st.Frames[st.Samples[a.sample].Frames[a.pos-1]].Func] += st.Samples[a.sample].Value
			}
		}
		callees := make([]string, 0, len(next))
		for fn := range next {
			callees = append(callees, fn)
		}
		sort.Slice(callees, func(i, j int) bool {
			if next[callees[i]] != next[callees[j]] {
				return next[callees[i]] > next[callees[j]]
			}
			return callees[i] < callees[j]
		})
		if len(callees) == 0 || float64(next[callees[0]]) < Spread*float64(curValue) {
			p.End = share(curValue)
			for _, fn := range callees[:min(6, len(callees))] {
				p.Callees = append(p.Callees, Step{Func: fn, Share: share(next[fn]), Own: ownFunc(st, own, fn)})
			}
			return p
		}
		top := callees[0]
		var kept []at
		for _, a := range cur {
			if a.pos > 0 && st.Frames[st.Samples[a.sample].Frames[a.pos-1]].Func == top {
				kept = append(kept, at{a.sample, a.pos - 1})
			}
		}
		cur, curValue = kept, next[top]
		p.Chain = append(p.Chain, Step{Func: top, Share: share(curValue), Own: ownFunc(st, own, top)})
		p.chain = append(p.chain, top)
	}
}

// entryPos is the index in s.Frames of its outermost own frame, or -1.
func entryPos(s evidence.Sample, own []bool) int {
	for i := len(s.Frames) - 1; i >= 0; i-- {
		if own[s.Frames[i]] {
			return i
		}
	}
	return -1
}

// ownFunc says whether fn is the program's own code (by its first frame).
func ownFunc(st *evidence.Stacks, own []bool, fn string) bool {
	for i, f := range st.Frames {
		if f.Func == fn {
			return own[i]
		}
	}
	return false
}

// Under reports whether a sample of the CPU profile runs through the whole
// chain: its outermost own frame is the entry and the frames leafward of
// it follow the chain to its end. Other rules use it to say that a cost is
// under the dominant path.
func (p *Path) Under(s evidence.Sample) bool {
	if p == nil {
		return false
	}
	pos := entryPos(s, p.own)
	if pos < len(p.chain)-1 {
		return false
	}
	for k, fn := range p.chain {
		if p.st.Frames[s.Frames[pos-k]].Func != fn {
			return false
		}
	}
	return true
}

// Frame is the frame of a sample at position pos of the chain (0 is the
// entry), with its file and line; nil when the sample is not under the
// whole chain.
func (p *Path) Frame(s evidence.Sample, pos int) *evidence.Frame {
	if p == nil || pos < 0 || pos >= len(p.chain) || !p.Under(s) {
		return nil
	}
	return &p.st.Frames[s.Frames[entryPos(s, p.own)-pos]]
}

// Entry is the function where the subtree starts.
func (p *Path) Entry() string { return p.Chain[0].Func }

// Last is the function where the chain ends and the cost spreads.
func (p *Path) Last() Step { return p.Chain[len(p.Chain)-1] }

// Caller is the chain's last function of the program's own code: the
// program's frame that calls into what the chain reaches (the entry when
// every later step is a dependency's).
func (p *Path) Caller() Step {
	for i := len(p.Chain) - 1; i >= 0; i-- {
		if p.Chain[i].Own {
			return p.Chain[i]
		}
	}
	return p.Chain[0]
}

// Name shortens a function of the path for text: Go's import path
// directories go ("storage.(*DiskMetricStore).loop"), and so does a Java
// method's package ("Select$LazyResultQueryFlat.fetchNextRow").
func (p *Path) Name(fn string) string {
	// A generic function's instantiation names its type shapes
	// ("pbkdf2.Key[go.shape.interface { BlockSize() int; ... }]"), which
	// may hold slashes: pprof's own short form is "[...]".
	if i := strings.Index(fn, "[go.shape."); i >= 0 && strings.HasSuffix(fn, "]") {
		fn = fn[:i] + "[...]"
	}
	if !p.java || !evidence.IsJava(fn) {
		return evidence.ShortFunc(fn)
	}
	parts := strings.Split(fn, ".")
	for i, part := range parts[:len(parts)-1] {
		if part != "" && part[0] >= 'A' && part[0] <= 'Z' {
			return strings.Join(parts[i:], ".")
		}
	}
	return strings.Join(parts[max(0, len(parts)-2):], ".")
}

// ChainText is the chain in short names, the middle elided when long:
// "storage.(*DiskMetricStore).loop -> storage.(*DiskMetricStore).checkWriteRequest
// -> prometheus.Gatherers.Gather".
func (p *Path) ChainText() string {
	var parts []string
	for _, s := range p.Chain {
		name := p.Name(s.Func)
		if len(parts) > 0 && strings.TrimSuffix(parts[len(parts)-1], "[...]") == strings.TrimSuffix(name, "[...]") {
			continue // recursion, or a wrapper of the same name
		}
		parts = append(parts, name)
	}
	if len(parts) > 6 {
		parts = append(append(parts[:2:2], "..."), parts[len(parts)-3:]...)
	}
	return strings.Join(parts, " -> ")
}

// ChainTo is the chain in short names down to fn, where a cost under the
// path is (a library call the program makes): the chain stops at fn when
// fn is on it, and goes on to it when not.
func (p *Path) ChainTo(fn string) string {
	for i, s := range p.Chain {
		if s.Func == fn {
			short := &Path{Chain: p.Chain[:i+1], java: p.java}
			return short.ChainText()
		}
	}
	return p.ChainText() + " -> " + p.Name(fn)
}

// Text is the chain with the subtree's share of all CPU and the costliest
// callees of its end.
func (p *Path) Text() string {
	s := p.ChainText() + " (" + human.Percent(p.Share) + ")"
	var callees []string
	for _, c := range p.Callees[:min(3, len(p.Callees))] {
		callees = append(callees, p.Name(c.Func)+" "+human.Percent(c.Share))
	}
	if len(callees) > 0 {
		s += ", calling " + strings.Join(callees, ", ")
	}
	return s
}
