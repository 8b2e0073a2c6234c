// Package goroutineleak finds goroutines blocked forever: proven by the
// runtime's goroutineleak profile where the target serves it, otherwise
// inferred from goroutines piling up at one blocking point that the
// execution trace never wakes (finding class goroutine-leak).
package mem003

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/perfdoctor/perfdoctor/internal/human"

	"github.com/google/pprof/profile"

	"github.com/perfdoctor/perfdoctor/evidence"
	"github.com/perfdoctor/perfdoctor/evidence/trace"
	"github.com/perfdoctor/perfdoctor/formats/goroutines"
	"github.com/perfdoctor/perfdoctor/rules"
)

// Rule is MEM003.
var Rule = &rules.Rule{
	ID:    "MEM003",
	Class: "goroutine-leak",
	Doc: rules.Doc{
		Title: "Goroutines are blocked forever",
		Text: `A goroutine blocked on something no one will ever do (a send on an unbuffered
channel whose receiver gave up after a timeout, a receive from a channel no one
closes, a WaitGroup whose Done was skipped by an early return, a loop on a
ticker that is never stopped) never exits. Its stack and everything it
references stay in memory, and with one leaked per request the goroutine count
and the heap grow with traffic until the process runs out of memory.`,
		Evidence: `Best first. The goroutineleak profile (Go >= 1.27; 1.26 built with
GOEXPERIMENT=goroutineleakprofile): a GC cycle proves which goroutines are
blocked on channels or locks no running goroutine can reach; when it is served
and empty the rule stays silent. Otherwise the goroutine profiles at the start
and end of the window, grouped by blocking point (the first frame outside the
runtime, sync and time): a group must grow by at least 50 goroutines. The
execution trace then tells a leak from a backlog: goroutines of a leak block at
that point and are never woken; a queue that drains wakes its waiters (at
least 10, and 1% of those still waiting) and is left to memory-growth. The
goroutine dump (goroutine?debug=2) names the go statement that created them
and how long they have waited (from one minute on); without it, the trace
names the go statement of those it saw created. The heap they hold is the
in-use heap allocated under the blocking function. Severity: proven leaks
high from 100 goroutines or when growing, medium from 10; inferred leaks high
from 100 goroutines of growth that the trace never woke, else medium;
without a trace at most medium.`,
		Fix: `Make the blocking operation one that cannot outlive its partner: a result
channel with a buffer of 1, so the late send completes and the goroutine exits;
a select on ctx.Done() next to every send and receive; close channels when the
producer is done; defer wg.Done() right after wg.Add; defer ticker.Stop() and
return on ctx.Done(). Keep it fixed with a test: under testing/synctest (Go >=
1.25) a goroutine left durably blocked fails the test, and go.uber.org/goleak's
VerifyNone (or VerifyTestMain) fails on any goroutine left running.`,
		Before: `ch := make(chan result)            // the handler stops reading after its timeout
go func() { ch <- fetch(ctx) }()   // ... and this send blocks forever`,
		After: `ch := make(chan result, 1)         // the send completes even when no one reads
go func() { ch <- fetch(ctx) }()
// test: synctest.Test(t, func(t *testing.T) { ... }) or defer goleak.VerifyNone(t)`,
		Caveats: `Without the leak profile the verdict is an inference: goroutines that wait
minutes for rare events (a worker pool idle on an empty queue) are not growth,
but a backlog that has not started draining within the trace looks like a
leak. Collect again after the load stops, or serve the leak profile (Go 1.27).
Goroutines waiting on the network are connections, not leaks, and are left out.`,
		Since: "0.2",
		Refs: []string{
			"https://pkg.go.dev/runtime/pprof#Profile",
			"https://pkg.go.dev/testing/synctest",
			"https://pkg.go.dev/go.uber.org/goleak",
		},
	},
	Needs: []rules.Input{rules.Goroutine},
	Uses:  []rules.Input{rules.Trace, rules.Heap},
	Check: check,
}

const (
	minGrowth   = 50  // goroutines a blocking point must gain over the window
	highCount   = 100 // goroutines for high severity
	mediumLeak  = 10  // proven leaked goroutines for medium severity
	minWoken    = 10  // wakes in the trace that make a queue, not a leak
	wokenShare  = 0.01
	minStackKiB = 2 // the smallest goroutine stack
	maxGroups   = 3 // blocking points reported
)

// group is the goroutines blocked at one point.
type group struct {
	at         evidence.Frame // first frame outside the blocking mechanics
	op         string         // the blocking operation, e.g. "chan send"
	entry      string         // the goroutine's function
	start, end int64          // goroutine profile counts
	leaked     int64          // in the leak profile
}

func (g *group) growth() int64 { return g.end - g.start }

func check(p *rules.Pass) error {
	ev := p.Evidence
	end := ev.Profile(evidence.Goroutine)
	total := goroutineTotal(end)
	groups := map[string]*group{}
	add(groups, end, func(g *group, n int64) { g.end += n })
	leakProfile := ev.Profile(evidence.GoroutineLeak)
	start := ev.Profile(evidence.GoroutineStart)
	if start != nil {
		add(groups, start, func(g *group, n int64) { g.start += n })
	}
	if leakProfile != nil {
		add(groups, leakProfile, func(g *group, n int64) { g.leaked += n })
	}
	if leakProfile == nil && start == nil {
		p.Skip("needs the goroutine profile at the start of the window or the goroutineleak profile (perfdoctor collect takes both where served)")
		return nil
	}
	ts, _ := ev.Trace()
	var found []*group
	verdicts := map[*group]string{}
	for _, g := range groups {
		switch {
		case leakProfile != nil:
			if g.leaked > 0 {
				found = append(found, g)
				verdicts[g] = "proven: the runtime's leak detector found them unreachable"
			}
		case g.growth() >= minGrowth && !network(g.op):
			w, seen := wait(ts, g.at)
			if seen && w.Woken >= minWoken && float64(w.Woken) >= wokenShare*float64(w.Still) {
				continue // a queue that drains: memory-growth's backlog
			}
			found = append(found, g)
			switch {
			case ts != nil:
				woke := "none"
				if w.Woken > 0 {
					woke = fmt.Sprintf("only %d", w.Woken)
				}
				verdicts[g] = fmt.Sprintf("inferred: %d more at the end of the window, and the %s trace woke %s of those blocked there", g.growth(), human.RoundDuration(ts.Window), woke)
			default:
				verdicts[g] = fmt.Sprintf("inferred: %d more at the end of the window; no trace to tell a leak from a backlog", g.growth())
			}
		}
	}
	if len(found) == 0 {
		return nil
	}
	slices.SortFunc(found, func(a, b *group) int {
		return cmp.Or(cmp.Compare(max(b.leaked, b.growth()), max(a.leaked, a.growth())), strings.Compare(a.at.Func, b.at.Func))
	})
	for i, g := range found {
		if i == maxGroups {
			break
		}
		f := finding(ev, g, total, verdicts[g], leakProfile != nil, ts != nil)
		f.Growing = true // goroutines blocked forever only accumulate
		p.Report(f)
	}
	return nil
}

func finding(ev *evidence.Evidence, g *group, total int64, verdict string, proven, traced bool) rules.Finding {
	count := g.end
	if proven {
		count = max(g.leaked, g.end)
	}
	var sev rules.Severity
	switch {
	case proven && (g.leaked >= highCount || g.growth() >= minGrowth):
		sev = rules.High
	case proven && g.leaked >= mediumLeak:
		sev = rules.Medium
	case proven:
		sev = rules.Low
	case traced && g.growth() >= highCount:
		sev = rules.High
	default:
		sev = rules.Medium
	}
	site, waited := creation(ev.GoroutineStacks, g.at)
	if site.Func == "" {
		site = traceCreation(ev, g.entry)
	}
	f := rules.Finding{
		Severity:    sev,
		Impact:      float64(count) / float64(max(total, count, 1)),
		Resource:    "memory",
		ImpactBasis: "goroutines blocked at this point as a share of all goroutines at the end of the window: they, their stacks and what they reference grow without bound",
		Summary: fmt.Sprintf("%s goroutines blocked forever on %s in %s (%s)",
			human.Number(float64(count)), g.op, rules.ShortFunc(g.at.Func), verdict),
		Evidence: []rules.Fact{
			rules.Text("verdict", verdict),
			rules.Text("blocking operation", g.op),
			rules.Text("blocked at", fmt.Sprintf("%s %s:%d", g.at.Func, g.at.File, g.at.Line)),
			rules.Count("goroutines blocked here", float64(g.end), "goroutines"),
			rules.Count("goroutines in the process", float64(total), "goroutines"),
		},
		Frames: []string{g.at.Func},
		Locations: []rules.Location{{Function: g.at.Func, File: g.at.File, Line: g.at.Line,
			Share: float64(count) / float64(max(total, 1)), Role: "blocked here"}},
	}
	if proven {
		f.Evidence = append(f.Evidence, rules.Count("leaked (goroutineleak profile)", float64(g.leaked), "goroutines"))
	}
	if ev.Profile(evidence.GoroutineStart) != nil {
		f.Evidence = append(f.Evidence, rules.Count("growth over the window", float64(g.growth()), "goroutines"))
		if w := ev.Window(); w > 0 && g.growth() > 0 {
			f.Evidence = append(f.Evidence, rules.Count("leak rate", float64(g.growth())/w.Seconds(), "goroutines/s"))
		}
	}
	if g.entry != "" && g.entry != g.at.Func {
		f.Evidence = append(f.Evidence, rules.Text("goroutine function", g.entry))
	}
	if site.Func != "" {
		f.Evidence = append(f.Evidence, rules.Text("created at", fmt.Sprintf("%s %s:%d", site.Func, site.File, site.Line)))
		f.Locations = append(f.Locations, rules.Location{Function: site.Func, File: site.File, Line: site.Line, Role: "go statement"})
	}
	if waited > 0 {
		f.Evidence = append(f.Evidence, rules.Duration("longest wait (goroutine dump)", waited))
	}
	f.Evidence = append(f.Evidence, rules.Bytes("stack memory held (at least)", uint64(count)*minStackKiB<<10))
	if held := heapUnder(ev.Profile(evidence.Heap), g.at.Func); held > 0 {
		f.Evidence = append(f.Evidence, rules.Bytes("heap in use allocated under "+rules.ShortFunc(g.at.Func), uint64(held)))
	}
	f.Fix = prescription(g, site)
	if !traced && !proven {
		f.Caveats = append(f.Caveats, "No execution trace and no leak profile: a backlog that has not drained yet looks the same. Collect with a trace, or after the load stops.")
	}
	return f
}

// add folds a goroutine profile into groups by blocking point.
func add(groups map[string]*group, p *profile.Profile, put func(*group, int64)) {
	if p == nil {
		return
	}
	for _, s := range p.Sample {
		if len(s.Value) == 0 {
			continue
		}
		at, op, entry, ok := blockingPoint(s)
		if !ok {
			continue
		}
		key := fmt.Sprintf("%s:%d", at.Func, at.Line)
		g := groups[key]
		if g == nil {
			g = &group{at: at, op: op, entry: entry}
			groups[key] = g
		}
		put(g, s.Value[0])
	}
}

// blockingPoint reads a parked goroutine's stack (innermost first): the
// first frame outside the blocking mechanics, the operation (the outermost
// mechanics frame) and the goroutine's function. Running goroutines and
// the runtime's own are not parked on application code.
func blockingPoint(s *profile.Sample) (at evidence.Frame, op, entry string, ok bool) {
	var frames []evidence.Frame
	for _, loc := range s.Location {
		for _, ln := range loc.Line { // inlined frames first, as in the stack
			if ln.Function != nil {
				frames = append(frames, evidence.Frame{Func: ln.Function.Name, File: ln.Function.Filename, Line: ln.Line})
			}
		}
	}
	if len(frames) == 0 || !strings.HasPrefix(frames[0].Func, "runtime.gopark") {
		return at, "", "", false
	}
	for i, f := range frames {
		if trace.WaitMechanics(f.Func) {
			op = f.Func
			continue
		}
		if i == 0 || f.Func == "runtime.goexit" {
			return at, "", "", false
		}
		at = f
		break
	}
	if at.Func == "" {
		return at, "", "", false
	}
	for i := len(frames) - 1; i >= 0; i-- {
		if frames[i].Func != "runtime.goexit" {
			entry = frames[i].Func
			break
		}
	}
	return at, operation(op), entry, true
}

// operation names the blocking operation from its outermost runtime frame.
func operation(fn string) string {
	switch {
	case strings.HasPrefix(fn, "runtime.chansend"):
		return "chan send"
	case strings.HasPrefix(fn, "runtime.chanrecv"):
		return "chan receive"
	case fn == "runtime.selectgo", fn == "runtime.block":
		return "select"
	case strings.Contains(fn, "WaitGroup"):
		return "sync.WaitGroup.Wait"
	case strings.Contains(fn, "Cond"):
		return "sync.Cond.Wait"
	case strings.Contains(fn, "Mutex"):
		return "mutex lock"
	case fn == "time.Sleep":
		return "time.Sleep"
	case strings.HasPrefix(fn, "internal/poll."), strings.HasPrefix(fn, "runtime.netpoll"):
		return "network I/O"
	}
	return strings.TrimPrefix(fn, "runtime.")
}

func network(op string) bool { return op == "network I/O" }

// wait finds the trace's record of goroutines blocking at f.
func wait(sum *trace.Summary, f evidence.Frame) (trace.ParkSite, bool) {
	if sum == nil {
		return trace.ParkSite{}, false
	}
	for _, w := range sum.Parks {
		if w.Frame.Func == f.Func && w.Frame.Line == f.Line {
			return w, true
		}
	}
	return trace.ParkSite{}, false
}

// creation is the most common go statement among the dump's goroutines
// blocked at f, and the longest wait among them.
func creation(d *goroutines.Dump, f evidence.Frame) (goroutines.Frame, time.Duration) {
	if d == nil {
		return goroutines.Frame{}, 0
	}
	counts := map[goroutines.Frame]int{}
	var longest time.Duration
	for _, g := range d.Goroutines {
		if !g.Blocked() || !blockedAt(g, f) {
			continue
		}
		counts[g.CreatedBy]++
		longest = max(longest, g.Wait)
	}
	var best goroutines.Frame
	for site, n := range counts {
		if site.Func != "" && (n > counts[best] || n == counts[best] && site.Func < best.Func) {
			best = site
		}
	}
	return best, longest
}

// traceCreation is the go statement the execution trace saw start most
// goroutines running entry, when there is no goroutine dump (the collector
// skips it for many goroutines: it stops the world).
func traceCreation(ev *evidence.Evidence, entry string) goroutines.Frame {
	sum, err := ev.Trace()
	if err != nil || entry == "" {
		return goroutines.Frame{}
	}
	best := -1
	for i, s := range sum.Goroutines.Sites {
		if s.Entry == entry && len(s.Stack) > 0 && (best < 0 || s.Created > sum.Goroutines.Sites[best].Created) {
			best = i
		}
	}
	if best < 0 {
		return goroutines.Frame{}
	}
	f := sum.Goroutines.Sites[best].Stack[0]
	return goroutines.Frame{Func: f.Func, File: f.File, Line: f.Line}
}

func blockedAt(g goroutines.Goroutine, f evidence.Frame) bool {
	for _, fr := range g.Stack {
		if trace.WaitMechanics(fr.Func) {
			continue
		}
		return fr.Func == f.Func && fr.Line == f.Line
	}
	return false
}

// heapUnder sums the in-use bytes allocated with fn on the stack.
func heapUnder(p *profile.Profile, fn string) int64 {
	if p == nil {
		return 0
	}
	idx := -1
	for i, st := range p.SampleType {
		if st.Type == "inuse_space" {
			idx = i
		}
	}
	if idx < 0 {
		return 0
	}
	var n int64
	for _, s := range p.Sample {
	frames:
		for _, loc := range s.Location {
			for _, ln := range loc.Line {
				if ln.Function != nil && ln.Function.Name == fn {
					n += s.Value[idx]
					break frames
				}
			}
		}
	}
	return n
}

func goroutineTotal(p *profile.Profile) int64 {
	var n int64
	for _, s := range p.Sample {
		if len(s.Value) > 0 {
			n += s.Value[0]
		}
	}
	return n
}

// prescription names the site and the operation with the fix that fits it.
func prescription(g *group, site goroutines.Frame) string {
	where := "the goroutine blocked in " + g.at.Func
	if site.Func != "" {
		where += fmt.Sprintf(", started by the go statement at %s:%d (in %s)", site.File, site.Line, site.Func)
	}
	var fix string
	switch g.op {
	case "chan send":
		fix = "its send has no receiver left (the receiver returned after a timeout or cancellation): give the channel a buffer of 1 so the send completes, or select on ctx.Done() alongside the send"
	case "chan receive":
		fix = "nothing will send on or close its channel: close the channel when the producer is done, or select on ctx.Done() alongside the receive"
	case "select":
		fix = "no case of its select will ever be ready: add a case <-ctx.Done() that returns, and stop tickers it waits on (defer ticker.Stop())"
	case "sync.WaitGroup.Wait":
		fix = "a wg.Add has no matching Done (an early return or a panic): call defer wg.Done() first thing in each goroutine started after Add"
	case "sync.Cond.Wait":
		fix = "no one will Signal or Broadcast its Cond: broadcast on shutdown and cancellation, or use a channel that can be closed"
	case "mutex lock":
		fix = "the lock it waits for is never released: unlock with defer right after Lock"
	default:
		fix = "what it waits for will not happen: give it a way out on ctx.Done()"
	}
	return fmt.Sprintf("%s: %s. Keep it fixed with a test that fails on a leaked goroutine: testing/synctest (Go >= 1.25) or go.uber.org/goleak's VerifyNone.", where, fix)
}
