// Package gcpause detects stop-the-world pauses long enough to show in the
// service's latency tail (finding class gc-pause-tail).
package gc004

import (
	"fmt"
	"github.com/perfdoctor/perfdoctor/internal/human"
	"time"

	"github.com/perfdoctor/perfdoctor/evidence"
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
or a goroutine cannot be preempted (a long copy or a tight loop in assembly).
Every request in flight waits the whole pause: a few such pauses a second set
p99 no matter how fast the handlers are. A short execution trace rarely
catches one; the runtime's pause history covers the whole window.`,
		Evidence: `The runtime statistics' pause history (MemStats.PauseNs and PauseEnd: the
last 256 pauses) between the window's start and end samples: the longest,
the pauses of 10 ms or more, and the share of the window spent in them, which
is the share of requests they delay. Compared with the request latency the
execution trace saw per HTTP handler, when it saw any. Reports long pauses
taking 0.5% of the window (low), 2% (medium) or 5% (high). The likely cause
is named from the /proc snapshot: cgroup throttling, GOMAXPROCS above the
CPUs or the quota, a load average above 1.5 per CPU (then at most low: the
host, not the service, is the cause).`,
		Fix: `Give the stop-the-world phase CPUs to run on: GOMAXPROCS at or below the CPU
quota (Go 1.25 does this by default in containers; before, go.uber.org/automaxprocs),
a quota with headroom or no throttling, fewer co-located CPU-bound processes.
Then make pauses rarer: fewer GC cycles (GOMEMLIMIT with a higher GOGC, fewer
allocations). Break very long non-preemptible work (huge copies, assembly
loops) into chunks.`,
		Before:  `GOMAXPROCS=16 on a 2-CPU quota   # STW waits for throttled threads`,
		After:   `GOMAXPROCS=2 (or Go >= 1.25's default), GOMEMLIMIT=... GOGC=400`,
		Caveats: `The pause history holds 256 pauses: past 256 cycles in the window only the last ones are seen. Pauses delay requests in flight; queued requests wait longer still.`,
		Since:   "0.2",
		Refs:    []string{"https://go.dev/doc/gc-guide", "https://pkg.go.dev/runtime#MemStats"},
	},
	Needs: []rules.Input{rules.Metrics},
	Uses:  []rules.Input{rules.Trace, rules.System},
	Check: check,
}

const (
	longPause               = 10 * time.Millisecond
	lowShare                = 0.005
	mediumShare, highShare  = 0.02, 0.05
	oversubscribed          = 1.5 // load average per CPU
	fewerPausesWithHeadroom = 0.5
)

func check(pass *rules.Pass) error {
	ev := pass.Evidence
	gc, _ := ev.GC()
	if gc.Span <= 0 || gc.Pauses == 0 {
		return nil
	}
	from, to := uint64(ev.MetricsStart.Time.UnixNano()), uint64(ev.MetricsEnd.Time.UnixNano())
	var long []time.Duration
	var longTotal time.Duration
	for _, p := range ev.MetricsEnd.Pauses {
		if d := time.Duration(p.Ns); p.End >= from && p.End <= to && d >= longPause {
			long = append(long, d)
			longTotal += d
		}
	}
	share := longTotal.Seconds() / gc.Span.Seconds()
	if share < lowShare {
		return nil
	}
	facts := []rules.Fact{
		rules.Duration("longest pause in the window", gc.PauseMax),
		rules.Count("pauses of 10 ms or more", float64(len(long)), ""),
		rules.Share("window spent in those pauses (requests delayed)", share),
		rules.Count("GC pauses in the window's history", float64(gc.Pauses), ""),
		rules.Duration("pause time in the window", gc.PauseTotal),
	}
	summary := fmt.Sprintf("GC pauses up to %s (%d of 10 ms or more) stop every request for %s of the window",
		human.RoundDuration(gc.PauseMax), len(long), human.Percent(share))
	if p99, handler := requestP99(ev); p99 > 0 {
		facts = append(facts, rules.Duration("request p99 in the execution trace ("+rules.ShortFunc(handler)+")", p99))
		summary += fmt.Sprintf("; request p99 %s", human.RoundDuration(p99))
	}
	sev := rules.Grade(share, mediumShare, highShare)
	cause, hostBound := likelyCause(ev)
	if cause != "" {
		facts = append(facts, rules.Text("likely cause", cause))
		summary += "; likely cause: " + cause
	}
	f := rules.Finding{
		Severity:    sev,
		Impact:      share * fewerPausesWithHeadroom,
		Resource:    "latency",
		ImpactBasis: "share of the window inside pauses of 10 ms or more (each delays every request in flight); CPU headroom for the stop-the-world phase and fewer cycles remove about half of it",
		Summary:     summary,
		Evidence:    facts,
		Fix:         pass.Rule.Doc.Fix,
		Example:     pass.Rule.Doc.Before + "\n->\n" + pass.Rule.Doc.After,
		Caveats:     []string{pass.Rule.Doc.Caveats},
	}
	if hostBound {
		f.Severity = min(f.Severity, rules.Low)
		f.Caveats = append(f.Caveats, "The host was oversubscribed during the window: pauses stretch when the process waits for a CPU, so measure again on a quiet host before acting.")
	}
	pass.Report(f)
	return nil
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
