// Package rules defines the contract every diagnosis rule follows and the
// engine that runs a catalog of rules over evidence. A rule has a stable ID,
// a finding class from findings.md, a structured doc, the inputs it needs,
// and a check that reports findings through a Pass. Rules read evidence only:
// they know nothing of how it was fetched or how findings are shown.
package rules

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/perfdoctor/perfdoctor/facts"

	"github.com/perfdoctor/perfdoctor/evidence"
)

// Input is a kind of evidence a rule reads.
type Input string

const (
	CPU       Input = "cpu"
	Heap      Input = "heap"
	Allocs    Input = "allocs"
	Goroutine Input = "goroutine"
	Mutex     Input = "mutex"
	Block     Input = "block"
	Metrics   Input = "metrics" // runtime statistics at the start and end of the window
	System    Input = "system"  // /proc and cgroup snapshot of a local target
	Trace     Input = "trace"   // an execution trace (runtime/trace, /debug/pprof/trace)
	GCTrace   Input = "gctrace" // the collector's log, GODEBUG=gctrace=1 (diagnose --gctrace)
	Host      Input = "host"    // /proc snapshots of the host at the start and end of the window
	Perf      Input = "perf"    // stacks with kernel frames from Linux perf
	JVM       Input = "jvm"     // a JFR recording's JVM summary (collect --jfr, or a .jfr file)
)

// howToCollect tells the user how to obtain each input.
var howToCollect = map[Input]string{
	CPU:       "a CPU profile (perfdoctor collect, or /debug/pprof/profile)",
	Heap:      "a heap profile (/debug/pprof/heap)",
	Allocs:    "an allocs profile (/debug/pprof/allocs)",
	Goroutine: "a goroutine profile (/debug/pprof/goroutine)",
	Mutex:     "a mutex profile (runtime.SetMutexProfileFraction > 0, /debug/pprof/mutex)",
	Block:     "a block profile (runtime.SetBlockProfileRate > 0, /debug/pprof/block)",
	Metrics:   "runtime statistics at the start and end of the window (perfdoctor collect)",
	System:    "a /proc snapshot of the target process (perfdoctor collect on the target's host, or perfdoctor sys --pid PID)",
	Trace:     "an execution trace under load (perfdoctor collect takes 1 s; or /debug/pprof/trace?seconds=1)",
	GCTrace:   "the target's stderr under GODEBUG=gctrace=1 (perfdoctor diagnose --gctrace FILE, or - for stdin)",
	Host:      "/proc snapshots at the start and end of the window (perfdoctor collect on the target's host, or perfdoctor sys)",
	Perf:      "kernel and user stacks from Linux perf (perfdoctor collect --perf, perfdoctor sys --perf, or a perf script text file)",
	JVM:       "a Java Flight Recorder recording (perfdoctor collect --jfr PID, or a .jfr file: JDK or async-profiler)",
}

// Has reports whether the evidence provides the input.
func Has(ev *evidence.Evidence, in Input) bool {
	switch in {
	case CPU, Heap, Allocs, Goroutine, Mutex, Block, Perf:
		return ev.Profile(evidence.Kind(in)) != nil
	case Metrics:
		return ev.HasRuntimeStats()
	case System:
		return ev.HasProcess()
	case Trace:
		return ev.HasTrace()
	case GCTrace:
		return ev.GCTrace != nil
	case Host:
		return ev.HasHostWindow()
	case JVM:
		return ev.JVM != nil
	}
	return false
}

// goOnly are inputs only a Go runtime produces; pprofOnly also those a
// JVM's recording gives but a native process cannot.
var (
	goOnly    = map[Input]bool{Heap: true, Goroutine: true, Metrics: true, Trace: true, GCTrace: true}
	pprofOnly = map[Input]bool{Allocs: true, Mutex: true, Block: true}
)

// foreign reports whether the missing inputs belong to another runtime
// than the evidence's: a JVM summary for a Go service, Go's heap, runtime
// statistics or traces for a JVM, either for a native process seen through
// perf. Such a rule does not apply, so it is left out of "not checked",
// which lists what the user could still collect.
func foreign(ev *evidence.Evidence, missing []Input) bool {
	platform := ev.Platform()
	isGo, isJVM, isNative := platform == evidence.PlatformGo, platform == evidence.PlatformJVM, platform == evidence.PlatformNative
	for _, in := range missing {
		switch {
		case isGo && in == JVM,
			isJVM && goOnly[in],
			isNative && (in == JVM || goOnly[in] || pprofOnly[in]):
			continue
		}
		return false
	}
	return platform != evidence.PlatformUnknown
}

// Doc is a rule's documentation, the single source for `perfdoctor explain`
// and the generated docs pages.
type Doc struct {
	Title    string   // one line
	Text     string   // what the rule detects and why it matters
	Evidence string   // the signals it reads and its thresholds
	Fix      string   // the prescription
	Before   string   // short code or config before the fix
	After    string   // and after
	Caveats  string   // when the advice does not apply
	Since    string   // perfdoctor version that introduced the rule
	Refs     []string // further reading
}

// Rule is one diagnosis. Check must not fail for ordinary evidence; it
// returns an error only for a defect, which the engine reports instead of
// stopping the run.
type Rule struct {
	ID    string
	Class string
	Doc   Doc
	Needs []Input // required: without them the rule is not checked
	// NeedsOneOf are alternative sources: at least one is required (NET006
	// reads a trace, or else the block profile).
	NeedsOneOf []Input
	Uses       []Input // optional: they sharpen the finding when present
	// Facts are the facts the check reads (facts.Get on Pass.Facts); a
	// read of one it did not declare fails the rule as a defect.
	Facts []facts.Key
	// Fallback rules run after all others and see their findings, so they
	// can stay out of what a specific rule already explained.
	Fallback bool
	Check    func(*Pass) error
}

// NeedsText lists what the rule requires: "cpu, metrics", "trace or block".
func (r *Rule) NeedsText() string {
	parts := make([]string, 0, len(r.Needs)+1)
	for _, in := range r.Needs {
		parts = append(parts, string(in))
	}
	if len(r.NeedsOneOf) > 0 {
		alts := make([]string, len(r.NeedsOneOf))
		for i, in := range r.NeedsOneOf {
			alts[i] = string(in)
		}
		parts = append(parts, strings.Join(alts, " or "))
	}
	return strings.Join(parts, ", ")
}

// Pass is one rule's view of a run.
type Pass struct {
	Rule     *Rule
	Evidence *evidence.Evidence
	// Facts are the diagnosis's shared readings, limited to those the
	// rule declared in Facts.
	Facts *facts.Pass
	// Earlier holds the findings of non-fallback rules; set for fallback rules only.
	Earlier  []Finding
	findings []Finding
	skipped  []string
}

// Report records a finding, filling in the rule's ID and class.
func (p *Pass) Report(f Finding) {
	f.Rule = p.Rule.ID
	f.Class = p.Rule.Class
	if f.Impact < 0 || math.IsNaN(f.Impact) {
		f.Impact = 0
	}
	f.Impact = math.Min(f.Impact, 1)
	if len(f.References) == 0 {
		f.References = p.Rule.Doc.Refs
	}
	p.findings = append(p.findings, f)
}

// Has reports whether the evidence provides the input.
func (p *Pass) Has(in Input) bool { return Has(p.Evidence, in) }

// NotChecked says why a rule did not run and what would let it.
type NotChecked struct {
	Rule    string   `json:"rule"`
	Class   string   `json:"class"`
	Missing []Input  `json:"missing,omitempty"`
	Reason  string   `json:"reason"`
	Collect []string `json:"collect,omitempty"`
}

// Result is the outcome of running a catalog.
type Result struct {
	Findings   []Finding
	NotChecked []NotChecked
	Catalog    []*Rule // the rules the run checked, which reports describe
}

// engineFacts are what the engine itself reads: to arbitrate claims on
// CPU samples and allocated bytes, and to say whose code a finding names.
var engineFacts = []facts.Key{facts.CPUStacks, facts.AllocStacks, facts.Owners, facts.WorkDone}

// Run checks every rule against the evidence of set, the facts every rule
// shares, and ranks the findings.
func Run(set *facts.Set, catalog []*Rule) Result {
	ev := set.Evidence()
	res := Result{Catalog: catalog}
	var earlier []Finding
	seen := map[string]int{} // findings per rule, for their IDs
	run := func(r *Rule) {
		var missing []Input
		for _, in := range r.Needs {
			if !Has(ev, in) {
				missing = append(missing, in)
			}
		}
		if len(r.NeedsOneOf) > 0 && !slices.ContainsFunc(r.NeedsOneOf, func(in Input) bool { return Has(ev, in) }) {
			missing = append(missing, r.NeedsOneOf...)
		}
		if len(missing) > 0 {
			if foreign(ev, missing) {
				return // a JVM rule on a Go service, or the reverse: not applicable, not missing
			}
			nc := NotChecked{Rule: r.ID, Class: r.Class, Missing: missing}
			names := make([]string, len(missing))
			for i, in := range missing {
				names[i] = string(in)
				nc.Collect = append(nc.Collect, howToCollect[in])
			}
			nc.Reason = "needs " + strings.Join(names, ", ")
			if len(r.NeedsOneOf) > 0 && len(missing) == len(r.Needs)+len(r.NeedsOneOf) {
				nc.Reason = "needs " + r.NeedsText()
			}
			res.NotChecked = append(res.NotChecked, nc)
			return
		}
		pass := &Pass{Rule: r, Evidence: ev, Facts: set.For("rule "+r.ID, r.Facts)}
		if r.Fallback {
			pass.Earlier = earlier
		}
		if err := safeCheck(pass); err != nil {
			res.NotChecked = append(res.NotChecked, NotChecked{Rule: r.ID, Class: r.Class, Reason: "rule failed: " + err.Error()})
			return
		}
		for _, why := range pass.skipped {
			res.NotChecked = append(res.NotChecked, NotChecked{Rule: r.ID, Class: r.Class, Reason: why})
		}
		for i := range pass.findings {
			f := &pass.findings[i]
			seen[f.Rule]++
			f.ID = f.Rule
			if n := seen[f.Rule]; n > 1 {
				f.ID += fmt.Sprintf("#%d", n)
			}
		}
		if !r.Fallback {
			earlier = append(earlier, pass.findings...)
		}
		res.Findings = append(res.Findings, pass.findings...)
	}
	for _, r := range catalog {
		if !r.Fallback {
			run(r)
		}
	}
	for _, r := range catalog {
		if r.Fallback {
			run(r)
		}
	}
	engine := set.For("the rules engine", engineFacts)
	attribute(facts.Get(engine, facts.CPUStacks), facts.Get(engine, facts.AllocStacks), res.Findings)
	weighCores(facts.Get(engine, facts.WorkDone), res.Findings)
	dragOverhead(facts.Get(engine, facts.CPUStacks), res.Findings)
	capCPU(res.Findings) // the drag added to some: within all of the CPU again
	linkHeldWaits(facts.Get(engine, facts.CPUStacks), res.Findings)
	markForeignCode(facts.Get(engine, facts.Owners), res.Findings)
	Rank(res.Findings, facts.Get(engine, facts.WorkDone).WaitBound())
	return res
}

// safeCheck runs a rule's check, turning a panic into an error so one
// defective rule cannot take the diagnosis down.
func safeCheck(p *Pass) (err error) {
	defer func() {
		if r := recover(); r != nil {
			if u, ok := r.(facts.UndeclaredError); ok {
				err = u
				return
			}
			err = fmt.Errorf("panic: %v", r)
		}
	}()
	return p.Rule.Check(p)
}

// Rank orders findings by the ranking model (docs/ranking.md): a symptom
// comes right after the finding that causes it, whatever its own estimate;
// other findings by severity (each resource graded by its own rules), then
// at one severity a growing cost (a leak, ports running out) before steady
// ones, then CPU before latency before memory, then by impact within a
// resource, then by ID, so output is stable. It fills each cause's Explains.
func Rank(fs []Finding, waitBound bool) {
	before := func(a, b *Finding) bool {
		if a.Severity != b.Severity {
			return a.Severity > b.Severity
		}
		if a.Growing != b.Growing {
			return a.Growing // it ends in an outage; a steady cost does not
		}
		if ra, rb := resourceOrder(a.Resource, waitBound), resourceOrder(b.Resource, waitBound); ra != rb {
			return ra < rb
		}
		if a.Impact != b.Impact {
			return a.Impact > b.Impact
		}
		return a.ID < b.ID
	}
	sorted := make([]Finding, len(fs))
	copy(sorted, fs)
	sort.SliceStable(sorted, func(i, j int) bool { return before(&sorted[i], &sorted[j]) })
	byID := map[string]*Finding{}
	for i := range sorted {
		byID[sorted[i].ID] = &sorted[i]
	}
	// A cycle of links has no cause to start from: the best-ranked finding
	// in it becomes a root.
	for i := range sorted {
		seen := map[string]bool{}
		for c := byID[sorted[i].CausedBy]; c != nil; c = byID[c.CausedBy] {
			if c.ID == sorted[i].ID {
				sorted[i].CausedBy, sorted[i].CauseReason = "", ""
				break
			}
			if seen[c.ID] {
				break // a cycle further up, broken at its own best-ranked member
			}
			seen[c.ID] = true
		}
	}
	children := map[string][]Finding{}
	var roots []Finding
	for _, f := range sorted {
		if f.CausedBy != "" && f.CausedBy != f.ID && byID[f.CausedBy] != nil {
			children[f.CausedBy] = append(children[f.CausedBy], f)
		} else {
			roots = append(roots, f)
		}
	}
	out := fs[:0]
	var walk func(f Finding)
	walk = func(f Finding) {
		out = append(out, f)
		for _, c := range children[f.ID] {
			walk(c)
		}
		delete(children, f.ID)
	}
	for _, f := range roots {
		walk(f)
	}
	fillExplains(fs)
}
