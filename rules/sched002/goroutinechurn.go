// Package sched002 detects many short-lived goroutines started per
// unit of work, when their number and their cost both say a bounded pool
// would pay (finding class goroutine-churn).
package sched002

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/perfdoctor/perfdoctor/facts"

	"github.com/perfdoctor/perfdoctor/evidence"
	"github.com/perfdoctor/perfdoctor/evidence/trace"
	"github.com/perfdoctor/perfdoctor/facts/frames"
	"github.com/perfdoctor/perfdoctor/internal/human"
	"github.com/perfdoctor/perfdoctor/rules"
)

// Rule is SCHED002.
var Rule = &rules.Rule{
	ID:    "SCHED002",
	Class: "goroutine-churn",
	Doc: rules.Doc{
		Title: "Many short-lived goroutines are started per unit of work",
		Text: `Goroutines are cheap, not free: each go statement allocates or reuses a g and
its stack, puts it on a run queue and later tears it down, and the scheduler
hands work between Ps to run them. A service that starts several goroutines per
request for small pieces of work (case B1: ~10 per request writing rate-limit
data to Redis, 70% of CPU in that async work) pays for the churn, and the
burst of runnable goroutines delays everything else.`,
		Evidence: `CPU share of goroutine creation and exit (runtime.newproc, newproc1, goexit0,
goexit1, gdestroy, gfget, gfput, malg) and of the scheduler (SCHED001's frames);
the go statements that create them (the caller of runtime.newproc in the CPU
profile, the creating stack of each goroutine in the execution trace); from the
trace, goroutines created per second, their lifetimes, the run time each, and
the runnable -> running delay; the goroutine profile's count by entry function.
Fires only when both counts and costs say so: creation and exit take at least
3% of CPU, or at least 1000 goroutines/s are created with creation plus
scheduling at least 5% of CPU or a p99 runnable -> running delay of at least
10 ms. Severity by creation plus half the scheduler share plus the CPU the
goroutines spend in hand-offs (channels, locks, wake-ups, system calls) when
each runs under 100 µs (per-item work a pooled, batching worker amortises):
20% high, 8% medium. Calibrated on case B1, whose fix saved 62% of the CPU
per request where this sum predicts 26-32% (with half the hand-offs it
predicted 20-25%, at the edge of high).`,
		Fix: `Bound the concurrency where the goroutines are created: a fixed set of
long-lived workers fed by a channel, sized to what the work needs (the
downstream's connection pool, the cores), or errgroup with SetLimit. Work that
is fire-and-forget per request (metrics, rate-limit counters, audit writes) is
better batched: one worker collects and writes in bulk.`,
		Before: `for _, k := range keys { go writeRateLimit(ctx, k) }   // ~10 goroutines per request`,
		After: `g, ctx := errgroup.WithContext(ctx); g.SetLimit(8)
for _, k := range keys { g.Go(func() error { return writeRateLimit(ctx, k) }) }
// or: a pool of workers reading from one channel, writing in batches`,
		Caveats: `A pool helps only where goroutines are many and short; where they are few
and cheap it adds a channel hand-off and gains nothing (case A5, where a
goroutine pool library gave no gain), so this rule stays silent then.
Goroutines the HTTP server starts per connection are not the service's to
pool: their churn means clients do not keep connections alive. Nor are those
a client library starts per call (database/sql's goroutine watching each
query's context): they come with the calls, and fewer or larger calls are
the fix, where a pool-queueing or small-requests finding names it.`,
		Since: "0.1",
		Refs: []string{
			"https://pkg.go.dev/golang.org/x/sync/errgroup#Group.SetLimit",
			"https://go.dev/doc/effective_go#goroutines",
		},
	},
	Needs: []rules.Input{rules.CPU},
	Uses:  []rules.Input{rules.Goroutine, rules.Trace},
	Facts: []facts.Key{facts.CPUStacks},
	Check: check,
}

// notTheServices reports whether a go statement is a server's per
// connection or a client library's per call.
func notTheServices(fn string) bool { return serverSites(fn) || frames.CallGoroutines(fn) }

// wrappers start goroutines on their callers' behalf: the site is the caller.
var wrappers = evidence.FuncPrefix(
	"golang.org/x/sync/errgroup.", "github.com/sourcegraph/conc", "github.com/panjf2000/ants",
)

// serverSites are servers starting a goroutine per connection or stream.
var serverSites = evidence.FuncPrefix(
	"net/http.(*Server).Serve", "net/http.(*http2serverConn)", "net/http.(*conn).serve",
	"net/http.(*connReader).startBackgroundRead", // one per request on a keep-alive connection
	"golang.org/x/net/http2.(*serverConn)", "google.golang.org/grpc.(*Server)",
	"google.golang.org/grpc/internal/transport.",
	"github.com/miekg/dns.(*Server)", // a goroutine per UDP packet or TCP connection (CoreDNS and most Go DNS servers)
)

const (
	minChurnShare    = 0.03
	minCreatedPerSec = 1000
	minCostShare     = 0.05
	latencyP99       = 10 * time.Millisecond
	mediumShare      = 0.08
	highShare        = 0.20
	maxSites         = 3
	minSiteShare     = 0.05 // of the goroutines created, to be named
)

// creator is a go statement with the evidence about it.
type creator struct {
	frame   evidence.Frame
	share   float64 // of goroutines created (trace) or of creation CPU
	created int
	ended   int
	entry   string
	life    time.Duration // mean lifetime of those that ended (a total while merging)
	runEach time.Duration // mean running time (a total while merging)
	fromCPU bool
}

func check(pass *rules.Pass) error {
	ev := pass.Evidence
	if !pass.EnoughCPU() {
		return nil
	}
	cpu := facts.Get(pass.Facts, facts.CPUStacks)
	churn := cpu.Share(frames.ChurnFrames)
	sched := cpu.Share(frames.SchedulerFrames)
	ts, traceErr := ev.Trace()
	var created float64
	var p99 time.Duration
	createdSrc := ""
	if ts != nil {
		created, createdSrc = ts.Goroutines.CreatedPerSec, "trace"
		p99 = ts.SchedLatency.P99
	}
	// Go >= 1.26 counts creations in runtime/metrics (the agent serves
	// them): the whole window, where a trace sees only its end.
	if rw, ok := ev.Runtime(); ok && rw.Has(evidence.MetricGoroutinesMade) && rw.Span > 0 {
		created, createdSrc = rw.GoroutinesCreated/rw.Span.Seconds(), "runtime/metrics"
	}
	counts := churn >= minChurnShare || created >= minCreatedPerSec
	costs := churn >= minChurnShare || churn+sched >= minCostShare || (ts != nil && p99 >= latencyP99)
	if !counts || !costs {
		return nil
	}

	sites, serverShare := creators(cpu, ts)
	if serverShare >= 0.8 {
		return nil // the server's per-connection or a library's per-call goroutines: not a pool's job
	}
	own := shortWork(cpu, sites)
	cost := churn + sched/2 + own
	f := rules.Finding{
		Severity: rules.Grade(cost, mediumShare, highShare),
		Impact:   cost,
		Resource: "cpu",
		ImpactBasis: "CPU share of goroutine creation and exit, plus half the scheduler's share, plus the CPU the goroutines spend " +
			"in hand-offs (channels, locks, wake-ups, system calls) when each runs under 100µs: a bounded pool removes the churn and the per-item hand-offs, and batching " +
			"the per-item work it then queues amortises its round trips (case B1: 3.1x less CPU per request)",
		Evidence: []rules.Fact{
			rules.Share("goroutine creation and exit share of CPU", churn),
			rules.Share("scheduler share of CPU", sched),
		},
		Frames: cpu.Matched(frames.ChurnFrames, 10),
	}
	if own > 0 {
		f.Evidence = append(f.Evidence, rules.Share("share of CPU in the short-lived goroutines' hand-offs", own))
	}
	if ts != nil && p99 >= latencyP99 && f.Severity < rules.Medium {
		f.Severity = rules.Medium
	}
	if createdSrc == "runtime/metrics" {
		f.Evidence = append(f.Evidence, rules.Count("goroutines created per second (runtime/metrics)", round(created), "/s"))
	}
	if ts != nil {
		g := ts.Goroutines
		f.Evidence = append(f.Evidence,
			rules.Count("goroutines created per second (trace)", round(g.CreatedPerSec), "/s"),
			rules.Count("most goroutines alive at once (trace)", float64(g.Max), ""),
		)
		if g.Lifetime.Count > 0 {
			f.Evidence = append(f.Evidence,
				durFact("goroutine lifetime p50", g.Lifetime.P50),
				durFact("goroutine lifetime p90", g.Lifetime.P90))
		}
		if ts.SchedLatency.Count > 0 {
			f.Evidence = append(f.Evidence, durFact("runnable -> running p99", p99))
		}
		if waits := ts.Blocked[trace.ReasonSync]; waits > 0 && ts.Window > 0 {
			f.Evidence = append(f.Evidence, rules.Count("goroutines blocked on sync (average)", round(waits.Seconds()/ts.Window.Seconds()), ""))
		}
	}
	if n, entry, count := goroutineCount(ev); n > 0 {
		f.Evidence = append(f.Evidence, rules.Count("goroutines in the goroutine profile", float64(n), ""))
		if entry != "" {
			f.Evidence = append(f.Evidence, rules.Text("most common goroutine entry function", fmt.Sprintf("%s (%d)", rules.ShortFunc(entry), count)))
		}
	}
	for _, s := range sites {
		role := "go statement (share of goroutines created)"
		if s.fromCPU {
			role = "go statement (share of goroutine-creation CPU)"
		}
		f.Locations = append(f.Locations, rules.Location{Function: s.frame.Func, File: s.frame.File, Line: s.frame.Line, Share: s.share, Role: role})
	}

	where := "the hot path"
	if len(sites) > 0 {
		where = rules.SiteName(sites[0].frame)
	}
	rate := ""
	if created > 0 {
		rate = fmt.Sprintf("%s goroutines/s, ", human.Number(round(created)))
	}
	f.Summary = fmt.Sprintf("Short-lived goroutines started at %s: %screation and exit %s of CPU, scheduler %s",
		where, rate, human.Percent(churn), human.Percent(sched))
	if len(sites) > 0 && sites[0].life > 0 {
		f.Summary += fmt.Sprintf("; each lives ~%s", roundDur(sites[0].life))
	}

	var fix strings.Builder
	if len(sites) > 0 {
		s := sites[0]
		fmt.Fprintf(&fix, "Bound the concurrency at %s", where)
		if s.entry != "" {
			fmt.Fprintf(&fix, " (it starts %s", rules.ShortFunc(s.entry))
			if s.runEach > 0 {
				fmt.Fprintf(&fix, ", which runs ~%s each", roundDur(s.runEach))
			}
			fix.WriteString(")")
		}
		fix.WriteString(": ")
	} else {
		fix.WriteString("Find the go statements on the hot path (an execution trace names them) and bound them: ")
	}
	fix.WriteString("a fixed pool of long-lived workers fed by a channel, sized to what the work needs (the downstream's connection pool, the cores), or errgroup.SetLimit. Fire-and-forget work per request is better batched by one worker. ")
	if len(sites) > 1 {
		fmt.Fprintf(&fix, "Other creating sites: %s.", siteNames(sites[1:]))
	}
	f.Fix = strings.TrimSpace(fix.String())
	f.Example = "jobs := make(chan job, 1024)\nfor range workers { go func() { for j := range jobs { j.do() } }() }\n// per request: jobs <- job{...}   instead of   go job{...}.do()"
	f.Caveats = append(f.Caveats, "A pool pays only where goroutines are many and short (case A5: a pool gave no gain where they were few and cheap).")
	switch {
	case errors.Is(traceErr, evidence.ErrNoTrace):
		f.Caveats = append(f.Caveats, "No execution trace: creation rate, lifetimes and the creating stacks are estimated from the CPU profile only.")
	case traceErr != nil:
		f.Caveats = append(f.Caveats, "The execution trace could not be read: "+traceErr.Error())
	}
	// The churn names the go statements that make it: a call site, which
	// owns the scheduler's hand-offs unless a setting (GOMAXPROCS above
	// the CPUs) explains them first.
	f.Claim = &rules.Claim{Level: rules.LevelCode, CPU: cpu.Has(evidence.Any(frames.ChurnFrames, frames.SchedulerFrames)),
		Grade: func(impact float64) rules.Severity { return rules.Grade(impact, mediumShare, highShare) }}
	pass.Report(f)
	return nil
}

// creators names the go statements, from the trace when there is one
// (counts), else from the CPU profile (the caller of runtime.newproc). It
// also returns the share of creations that come from server accept loops
// and from client libraries' per-call goroutines (frames.CallGoroutines),
// none of them the service's to bound.
func creators(cpu *evidence.Stacks, ts *trace.Summary) ([]creator, float64) {
	var out []creator
	var server float64
	if ts != nil && ts.Goroutines.Created > 0 {
		total := float64(ts.Goroutines.Created)
		merged := map[evidence.Frame]*creator{}
		var order []*creator
		for _, s := range ts.Goroutines.Sites {
			fr, ok := goSite(s.Stack)
			if !ok {
				continue
			}
			if notTheServices(fr.Func) {
				server += float64(s.Created) / total
				continue
			}
			c := merged[fr]
			if c == nil {
				c = &creator{frame: fr, entry: s.Entry}
				merged[fr] = c
				order = append(order, c)
			}
			c.created += s.Created
			c.ended += s.Ended
			c.life += s.Life
			c.runEach += s.Running
		}
		sort.SliceStable(order, func(i, j int) bool { return order[i].created > order[j].created })
		for _, c := range order[:min(maxSites, len(order))] {
			c.share = float64(c.created) / total
			if c.share < minSiteShare {
				break
			}
			c.runEach /= time.Duration(c.created)
			if c.ended > 0 {
				c.life /= time.Duration(c.ended)
			}
			out = append(out, *c)
		}
		if len(out) > 0 || server > 0 {
			return out, server
		}
	}
	inNewproc := cpu.Has(evidence.FuncPrefix("runtime.newproc"))
	pick := cpu.First(func(fn string) bool {
		return !evidence.IsRuntime(fn) && !wrappers(fn) && !strings.HasPrefix(fn, "sync.(*WaitGroup).Go")
	})
	var total int64
	for _, s := range cpu.Samples {
		if inNewproc(s) {
			total += s.Value
		}
	}
	sites := cpu.TopSites(maxSites+2, func(s evidence.Sample) *evidence.Frame {
		if !inNewproc(s) {
			return nil
		}
		return pick(s)
	})
	for _, s := range sites {
		share := float64(s.Value) / float64(total)
		if notTheServices(s.Func) {
			server += share
			continue
		}
		if len(out) < maxSites && share >= minSiteShare {
			out = append(out, creator{frame: s.Frame, share: share, fromCPU: true})
		}
	}
	return out, server
}

// maxBatchable is the running time per goroutine below which its work is
// per-item overhead that batching amortises (a channel round trip, one small
// write), rather than real work a pool would only move.
const maxBatchable = 100 * time.Microsecond

// shortWork is the CPU share the goroutines started at the named sites
// (stacks rooted at their entry function) spend in hand-offs: samples whose
// leaf is the runtime, package sync or a system call (channel sends and
// receives, locks, condition variables, waking and parking, one small
// write). Counted only for sites whose
// goroutines run briefly each, where that per-item overhead is what a pool
// batches away (B1: 19 of its 23%); their own computation (R4's fan-out
// probes an index, 5-10% of CPU) stays whatever runs it.
func shortWork(cpu *evidence.Stacks, sites []creator) float64 {
	entries := map[string]bool{}
	for _, c := range sites {
		if c.entry != "" && c.runEach > 0 && c.runEach < maxBatchable {
			entries[c.entry] = true
		}
	}
	if len(entries) == 0 {
		return 0
	}
	return cpu.ShareWhere(func(s evidence.Sample) bool {
		if len(s.Frames) == 0 || !handoff(cpu.Frames[s.Frames[0]].Func) {
			return false
		}
		for i := len(s.Frames) - 1; i >= 0; i-- {
			if fn := cpu.Frames[s.Frames[i]].Func; fn != "runtime.goexit" {
				return entries[fn]
			}
		}
		return false
	})
}

// handoff reports whether a leaf function is synchronisation between
// goroutines or a system call rather than their own computation.
func handoff(fn string) bool {
	return evidence.IsRuntime(fn) || strings.HasPrefix(fn, "sync.") || strings.HasPrefix(fn, "internal/sync.") ||
		frames.SyscallFrames(fn)
}

// goSite is the go statement in a creating stack: the first frame that is
// neither the runtime nor a wrapper that starts goroutines for its caller.
func goSite(stack []trace.Frame) (evidence.Frame, bool) {
	for _, f := range stack {
		if evidence.IsRuntime(f.Func) || wrappers(f.Func) || strings.HasPrefix(f.Func, "sync.(*WaitGroup).Go") {
			continue
		}
		return evidence.Frame{Func: f.Func, File: f.File, Line: f.Line}, true
	}
	return evidence.Frame{}, false
}

// goroutineCount is the goroutine profile's total and its most common
// entry function (the root frame of each stack).
func goroutineCount(ev *evidence.Evidence) (int64, string, int64) {
	st := evidence.NewStacks(ev.Profile(evidence.Goroutine), "goroutine")
	if st == nil {
		st = evidence.NewStacks(ev.Profile(evidence.Goroutine), "")
	}
	if st == nil {
		return 0, "", 0
	}
	byEntry := map[string]int64{}
	for _, s := range st.Samples {
		if len(s.Frames) > 0 {
			byEntry[st.Frames[s.Frames[len(s.Frames)-1]].Func] += s.Value
		}
	}
	var top string
	var n int64
	for fn, c := range byEntry {
		if c > n || (c == n && fn < top) {
			top, n = fn, c
		}
	}
	return st.Total, top, n
}

func siteNames(cs []creator) string {
	var parts []string
	for _, c := range cs {
		parts = append(parts, fmt.Sprintf("%s %s", rules.SiteName(c.frame), human.Percent(c.share)))
	}
	return strings.Join(parts, ", ")
}

func durFact(name string, d time.Duration) rules.Fact {
	return rules.Fact{Name: name, Value: roundDur(d).String(), Num: float64(d) / float64(time.Millisecond), Unit: "ms"}
}

func roundDur(d time.Duration) time.Duration {
	switch {
	case d >= time.Second:
		return d.Round(time.Millisecond)
	case d >= time.Millisecond:
		return d.Round(10 * time.Microsecond)
	case d >= time.Microsecond:
		return d.Round(10 * time.Nanosecond)
	}
	return d
}

func round(v float64) float64 { return float64(int64(v*100+0.5)) / 100 }
