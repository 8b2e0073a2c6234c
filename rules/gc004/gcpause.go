// Package gcpause detects stop-the-world pauses long enough to show in the
// service's latency tail (finding class gc-pause-tail).
package gc004

import (
	"fmt"
	"path/filepath"
	"slices"
	"time"

	"github.com/perfdoctor/perfdoctor/facts"

	"github.com/perfdoctor/perfdoctor/evidence"
	"github.com/perfdoctor/perfdoctor/evidence/trace"
	"github.com/perfdoctor/perfdoctor/internal/human"
	"github.com/perfdoctor/perfdoctor/rules"
)

// Rule is GC004.
var Rule = &rules.Rule{
	ID:    "GC004",
	Class: "gc-pause-tail",
	Doc: rules.Doc{
		Title: "Garbage-collector pauses long enough to set the latency tail",
		Text: `Go's stop-the-world phases are normally well under a millisecond, but each
needs every running goroutine to stop, so one pause can stretch to tens or
hundreds of milliseconds when the process cannot get a CPU (a cgroup quota
throttling it, GOMAXPROCS above the CPUs it may use, an oversubscribed host)
or a goroutine cannot be preempted: a copy or clear of hundreds of MiB is one
runtime.memmove or memclr call, and assembly is never interrupted, so the
pause lasts until the call returns (casebook L4: a 512 MiB snapshot copy).
Every request in flight waits the whole pause: a few such pauses a second set
p99 no matter how fast the handlers are. A short execution trace rarely
catches one; the runtime's pause history covers the whole window.`,
		Evidence: `The runtime statistics' pause history (MemStats.PauseNs and PauseEnd: the
last 256 GC cycles, each cycle's two stop-the-world phases summed, as gctrace's
first and third clock figures) between the window's start and end samples:
the longest, the cycles stopped 10 ms or more, and the share of the window
spent in them, which is the share of requests they delay (of the time the
history covers, when the window had more than 256 cycles). With
runtime/metrics at both ends, the /sched/pauses/total/gc:seconds histogram
counts each phase's pauses too. Compared with the request latency the
execution trace saw per HTTP handler, when it saw any. Reports long pauses
taking 0.5% of the window (low), 2% (medium) or 5% (high). The window's
pauses are its cycles by number (start to end sample), not by clock. The
cause is the code the trace's pauses waited for when one place held at least
half of their time (the goroutine that stopped last, well into the pause) and
ran through them (CPU profile samples in the trace while they waited; without
those, only on a host that was not oversubscribed, where a thread waiting for
a CPU can hold a pause too). A 1 s trace may catch no long pause; then the
cause is code a goroutine ran 30 ms or more at a time without yielding (the
runtime asks after 10 ms; Go code yields within microseconds), with CPU
samples at half the trace's rate or more. Otherwise it is named from the /proc snapshot:
cgroup throttling, GOMAXPROCS above the CPUs or the quota, a load average
above 1.5 per CPU (then at most low: the host, not the service, is the cause).`,
		Fix: `Give the stop-the-world phase CPUs to run on: GOMAXPROCS at or below the CPU
quota (Go 1.25 does this by default in containers; before, go.uber.org/automaxprocs),
a quota with headroom or no throttling, fewer co-located CPU-bound processes.
Then make pauses rarer: fewer GC cycles (GOMEMLIMIT with a higher GOGC, fewer
allocations). Break very long non-preemptible work (huge copies, assembly
loops) into chunks with a function call per chunk (a preemption point).`,
		Before:  `GOMAXPROCS=16 on a 2-CPU quota   # STW waits for throttled threads`,
		After:   `GOMAXPROCS=2 (or Go >= 1.25's default), GOMEMLIMIT=... GOGC=400`,
		Caveats: `The pause history holds 256 pauses: past 256 cycles in the window only the last ones are seen. Pauses delay requests in flight; queued requests wait longer still.`,
		Since:   "0.2",
		Refs:    []string{"https://go.dev/doc/gc-guide", "https://pkg.go.dev/runtime#MemStats"},
	},
	Needs: []rules.Input{rules.Metrics},
	Uses:  []rules.Input{rules.Trace, rules.System},
	Facts: []facts.Key{facts.CPUStacks},
	Check: check,
}

const (
	longPause               = 10 * time.Millisecond
	lowShare                = 0.005
	mediumShare, highShare  = 0.02, 0.05
	oversubscribed          = 1.5 // load average per CPU
	fewerPausesWithHeadroom = 0.5
	// holdoutShare is the share of the trace's stop-the-world time one
	// holdout must account for to be named the cause.
	holdoutShare = 0.5
	// minHoldSamples is how many CPU samples (10 ms of CPU each) a holdout
	// must take during the pauses to count as running through them.
	minHoldSamples = 2
	// longRunCause is the shortest run without yielding taken as
	// non-preemptible: Go code yields within 10-20 ms of being asked
	// (casebook L4's chunked copy: runs of 20.4 ms at most), a 512 MiB
	// memmove runs 60-80 ms.
	longRunCause = 30 * time.Millisecond
	// runningRate is the part of the trace's CPU sample rate (samples per
	// second of goroutine running time) a long run must show to have been
	// on a CPU rather than taken off it by the OS.
	runningRate = 0.5
)

func check(pass *rules.Pass) error {
	ev := pass.Evidence
	gc, _ := ev.GC()
	if gc.Span <= 0 || gc.Pauses == 0 {
		return nil
	}
	to := uint64(ev.MetricsEnd.Time.UnixNano())
	var long []time.Duration
	var longTotal time.Duration
	covered := uint64(0) // the first pause of the history in the window
	for _, p := range ev.MetricsEnd.PausesSince(ev.MetricsStart) {
		if covered == 0 {
			covered = p.End
		}
		if d := time.Duration(p.Ns); d >= longPause {
			long = append(long, d)
			longTotal += d
		}
	}
	// Past 256 cycles in the window the history holds only the last ones:
	// the share is then of the time the history covers.
	span := gc.Span
	if gc.Cycles > uint64(gc.Pauses) && to > covered {
		span = time.Duration(to - covered)
	}
	share := longTotal.Seconds() / span.Seconds()
	if share < lowShare {
		return nil
	}
	shown := []rules.Fact{
		rules.Duration("longest pause in the window (one GC cycle's stop-the-world phases)", gc.PauseMax),
		rules.Count("GC cycles stopped 10 ms or more", float64(len(long)), ""),
		rules.Share("window spent in those pauses (requests delayed)", share),
		rules.Count("GC pauses in the window's history", float64(gc.Pauses), ""),
		rules.Duration("pause time in the window", gc.PauseTotal),
	}
	if gc.Cycles > uint64(gc.Pauses) {
		shown = append(shown, rules.Duration("window covered by the pause history (last 256 cycles)", span))
	}
	if n, longest, ok := metricsPauses(ev); ok {
		shown = append(shown,
			rules.Count("stop-the-world pauses of 10 ms or more (runtime/metrics, each phase)", float64(n), ""),
			rules.Duration("longest stop-the-world pause (runtime/metrics bucket)", longest))
	}
	summary := fmt.Sprintf("GC pauses up to %s (%d of 10 ms or more) stop every request for %s of the window",
		human.RoundDuration(gc.PauseMax), len(long), human.Percent(share))
	if p99, handler := requestP99(ev); p99 > 0 {
		shown = append(shown, rules.Duration("request p99 in the execution trace ("+rules.ShortFunc(handler)+")", p99))
		summary += fmt.Sprintf("; request p99 %s", human.RoundDuration(p99))
	}
	f := rules.Finding{
		Severity:    rules.Grade(share, mediumShare, highShare),
		Impact:      share * fewerPausesWithHeadroom,
		Resource:    "latency",
		ImpactBasis: "share of the window inside pauses of 10 ms or more (each delays every request in flight); CPU headroom for the stop-the-world phase and fewer cycles remove about half of it",
		Evidence:    shown,
		Fix:         pass.Rule.Doc.Fix,
		Example:     pass.Rule.Doc.Before + "\n->\n" + pass.Rule.Doc.After,
		Caveats:     []string{pass.Rule.Doc.Caveats},
	}
	cause, hostBound := likelyCause(ev)
	if w, ok := waitedFor(ev, hostBound); ok {
		// The trace shows code that would not stop: that code, not the
		// host, is the cause, and making it preemptible removes the long
		// pauses.
		summary += blame(&f, facts.Get(pass.Facts, facts.CPUStacks), w, share)
		if hostBound {
			f.Caveats = append(f.Caveats, "The host was oversubscribed during the window, which stretches the pauses further; the wait for non-preemptible code remains on a quiet host.")
		}
	} else if cause != "" {
		f.Evidence = append(f.Evidence, rules.Text("likely cause", cause))
		summary += "; likely cause: " + cause
		if hostBound {
			f.Severity = min(f.Severity, rules.Low)
			f.Caveats = append(f.Caveats, "The host was oversubscribed during the window: pauses stretch when the process waits for a CPU, so measure again on a quiet host before acting.")
		}
	}
	f.Summary = summary
	pass.Report(f)
	return nil
}

func entryNote(entry string) string {
	if entry == "" {
		return ""
	}
	return ", started as " + rules.ShortFunc(entry)
}

// nonPreemptible is code the execution trace shows holding the world's
// stops: where its goroutine stopped and the trace's facts proving it.
type nonPreemptible struct {
	stack []trace.Frame
	entry string
	shown []rules.Fact
	basis string // why removing it removes the long pauses
}

// waitedFor finds the code the window's long pauses waited for. Best, the
// trace caught pauses waiting for it: one place held at least half of the
// trace's stop-the-world time and ran through it (CPU profile samples in
// the trace while they waited; without those, only on a host that was not
// oversubscribed, where a thread waiting for a CPU can hold a pause too).
// Else, a 1 s trace often catches no long pause while the code that makes
// them runs several times: a goroutine that ran 30 ms or more without
// yielding, running all along (its CPU samples at half the trace's rate or
// more), holds every stop-the-world begun meanwhile.
func waitedFor(ev *evidence.Evidence, hostBound bool) (nonPreemptible, bool) {
	if ev.TracePath == "" && ev.TraceSummary == nil {
		return nonPreemptible{}, false
	}
	s, err := ev.Trace()
	if err != nil {
		return nonPreemptible{}, false
	}
	if h, ok := holdout(s, hostBound); ok {
		shown := traceFacts(rules.Count("trace pauses that waited for it", float64(h.Pauses), ""),
			rules.Duration("longest wait for it to stop", h.Max),
			"CPU samples it took while the pauses waited (running, not waiting for a CPU)", h.CPUSamples)
		return nonPreemptible{stack: h.Stack, entry: h.Entry, shown: shown,
			basis: "the execution trace shows them waiting for one piece of code to stop"}, true
	}
	for _, r := range s.GC.LongRuns {
		if r.Max < longRunCause || r.Runs == 0 {
			continue
		}
		if s.CPUSamples > 0 && s.Running > 0 {
			rate := float64(s.CPUSamples) / s.Running.Seconds()
			if r.CPUSamples < minHoldSamples || float64(r.CPUSamples)/r.Total.Seconds() < runningRate*rate {
				continue
			}
		} else if hostBound {
			continue
		}
		shown := traceFacts(rules.Count("runs of 20 ms or more without yielding there (execution trace)", float64(r.Runs), ""),
			rules.Duration("longest run without yielding (the runtime asks after 10 ms)", r.Max),
			"CPU samples it took in those runs (running, not waiting for a CPU)", r.CPUSamples)
		return nonPreemptible{stack: r.Stack, entry: r.Entry, shown: shown,
			basis: "the execution trace shows one piece of code running " + human.RoundDuration(r.Max).String() + " at a time without yielding, and every stop-the-world begun meanwhile waits for it"}, true
	}
	return nonPreemptible{}, false
}

// traceFacts is what the trace shows of non-preemptible code: how often,
// the longest, and the CPU samples it took meanwhile when a CPU profile
// ran with the trace.
func traceFacts(count, longest rules.Fact, samplesName string, samples int) []rules.Fact {
	shown := []rules.Fact{count, longest}
	if samples > 0 {
		shown = append(shown, rules.Count(samplesName, float64(samples), ""))
	}
	return shown
}

// holdout is the trace's pause holdout that held at least half of its
// stop-the-world time and is shown to have run through the pauses.
func holdout(s *trace.Summary, hostBound bool) (trace.Holdout, bool) {
	if len(s.GC.Holdouts) == 0 {
		return trace.Holdout{}, false
	}
	h := s.GC.Holdouts[0]
	if h.Max < longPause || h.Wait.Seconds() < holdoutShare*s.GC.STW.Total.Seconds() {
		return trace.Holdout{}, false
	}
	if s.CPUSamples > 0 {
		return h, h.CPUSamples >= max(minHoldSamples, h.Pauses/2)
	}
	return h, !hostBound
}

// blame names w as the cause of f's pauses, share of the window: its
// evidence, locations, impact and fix, and the summary's clause.
func blame(f *rules.Finding, cpu *evidence.Stacks, w nonPreemptible, share float64) string {
	at := w.stack[0]
	stopped := fmt.Sprintf("%s (%s:%d)", rules.ShortFunc(at.Func), filepath.Base(at.File), at.Line)
	work := stopped
	f.Evidence = append(f.Evidence, rules.Text("what the pauses waited for (execution trace)", "the goroutine running "+stopped+entryNote(w.entry)))
	f.Evidence = append(f.Evidence, w.shown...)
	if site, leaf, part, ok := workUnder(cpu, at.Func); ok {
		work = fmt.Sprintf("%s (%s:%d), in %s", rules.ShortFunc(site.Func), filepath.Base(site.File), site.Line, rules.ShortFunc(leaf))
		f.Evidence = append(f.Evidence, rules.Text("its CPU (CPU profile)", fmt.Sprintf("%s in %s of its samples, called at %s (%s:%d)",
			rules.ShortFunc(leaf), human.Percent(part), rules.ShortFunc(site.Func), filepath.Base(site.File), site.Line)))
		f.Locations = append(f.Locations, rules.Location{Function: site.Func, File: site.File, Line: site.Line, Share: part, Role: "the work the pauses waited for (share of the goroutine's CPU)"})
	}
	f.Impact = share
	f.ImpactBasis = "share of the window inside pauses of 10 ms or more (each delays every request in flight); " + w.basis + ", so making it preemptible removes them"
	f.Fix = fmt.Sprintf("Make the work in %s preemptible: a copy, clear or assembly loop over hundreds of MiB is one call the runtime cannot interrupt, and every stop-the-world waits for it. Do it in chunks of about 1 MiB with a function call per chunk (each call's prologue is a preemption point), or avoid the bulk work (copy-on-write, a double buffer swapped by pointer). Fewer GC cycles (GOMEMLIMIT with a higher GOGC) then make the remaining pauses rarer.", work)
	f.Example = "copy(snap, table)   // 512 MiB in one runtime.memmove\n->\nfor off := 0; off < len(table); off += 1 << 20 {\n\tcopyChunk(snap[off:], table[off:min(off+1<<20, len(table))]) // //go:noinline: a preemption point per MiB\n}"
	for _, fr := range w.stack {
		f.Locations = append(f.Locations, rules.Location{Function: fr.Func, File: fr.File, Line: fr.Line, Share: 1, Role: "where the goroutine the pauses waited for stopped"})
		f.Frames = append(f.Frames, fr.Func)
	}
	return "; the pauses wait for non-preemptible work in " + work
}

// workUnder finds what the CPU profile shows fn doing: the leaf function
// most of fn's samples end in, and the application frame closest to it,
// when one leaf has at least half of them.
func workUnder(st *evidence.Stacks, fn string) (at evidence.Frame, leaf string, part float64, ok bool) {
	if st == nil || st.Total == 0 {
		return evidence.Frame{}, "", 0, false
	}
	inFn := st.FrameHits(func(f string) bool { return f == fn })
	isApp := st.FrameHits(func(f string) bool { return !evidence.IsRuntime(f) })
	var under int64
	type key struct {
		leaf string
		at   evidence.Frame
	}
	by := map[key]int64{}
	for _, sm := range st.Samples {
		if !slices.ContainsFunc(sm.Frames, func(id int32) bool { return inFn[id] }) || len(sm.Frames) == 0 {
			continue
		}
		under += sm.Value
		k := key{leaf: st.Frames[sm.Frames[0]].Func}
		if i := slices.IndexFunc(sm.Frames, func(id int32) bool { return isApp[id] }); i >= 0 {
			k.at = st.Frames[sm.Frames[i]]
		}
		by[k] += sm.Value
	}
	var best key
	for k, v := range by {
		if v > by[best] {
			best = k
		}
	}
	if under == 0 || best.at.Func == "" || 2*by[best] < under {
		return evidence.Frame{}, "", 0, false
	}
	return best.at, best.leaf, float64(by[best]) / float64(under), true
}

// metricsPauses reads the window's stop-the-world pauses from the
// runtime/metrics histogram at both ends (each phase on its own, every
// pause, not only the last 256 cycles): how many lasted 10 ms or more, and
// the upper bound of the bucket of the longest.
func metricsPauses(ev *evidence.Evidence) (long uint64, longest time.Duration, ok bool) {
	a, b := ev.MetricsStart.Runtime, ev.MetricsEnd.Runtime
	if a == nil || b == nil {
		return 0, 0, false
	}
	h0, ok0 := a.Histograms[evidence.MetricGCPauses]
	h1, ok1 := b.Histograms[evidence.MetricGCPauses]
	if !ok0 || !ok1 || len(h0.Counts) != len(h1.Counts) || len(h1.Buckets) != len(h1.Counts)+1 {
		return 0, 0, false
	}
	for i, c := range h1.Counts {
		n := c - min(c, h0.Counts[i])
		if n == 0 {
			continue
		}
		if h1.Buckets[i] >= longPause.Seconds() {
			long += n
		}
		longest = time.Duration(min(h1.Buckets[i+1], time.Hour.Seconds()) * 1e9)
	}
	return long, longest, true
}

// requestP99 is the p99 of the busiest request path the trace saw.
func requestP99(ev *evidence.Evidence) (time.Duration, string) {
	if ev.TracePath == "" && ev.TraceSummary == nil {
		return 0, ""
	}
	s, err := ev.Trace()
	if err != nil || len(s.Requests) == 0 {
		return 0, ""
	}
	return s.Requests[0].Latency.P99, s.Requests[0].Handler
}

// likelyCause names why a stop-the-world phase could wait for CPUs, and
// whether it is the host rather than the service.
func likelyCause(ev *evidence.Evidence) (string, bool) {
	d, ok := ev.SystemDelta()
	if !ok {
		return "", false
	}
	if s, e := d.Start.Cgroup, d.End.Cgroup; s != nil && e != nil && e.CPUQuotaCores > 0 && e.NrThrottled > s.NrThrottled {
		return fmt.Sprintf("CPU throttling under a %.2g-CPU quota (%d throttled periods)", e.CPUQuotaCores, e.NrThrottled-s.NrThrottled), false
	}
	set := ev.Settings()
	cpus := float64(set.NumCPU)
	if set.CPUQuota > 0 && set.CPUQuota < cpus {
		cpus = set.CPUQuota
	}
	if set.GOMAXPROCS > 0 && cpus > 0 && float64(set.GOMAXPROCS) > cpus {
		return fmt.Sprintf("GOMAXPROCS %d above the %.2g CPUs available", set.GOMAXPROCS, cpus), false
	}
	if m := d.End.Machine; m.NumCPU > 0 && m.LoadAvg[0]/float64(m.NumCPU) > oversubscribed {
		return fmt.Sprintf("an oversubscribed host (load average %.1f on %d CPUs)", m.LoadAvg[0], m.NumCPU), true
	}
	return "", false
}
