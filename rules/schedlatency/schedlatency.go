// Package schedlatency detects runnable goroutines waiting long for a CPU,
// from an execution trace (finding class scheduling-latency).
package schedlatency

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/perfdoctor/perfdoctor/evidence"
	"github.com/perfdoctor/perfdoctor/evidence/trace"
	"github.com/perfdoctor/perfdoctor/rules"
)

// Rule is SCHED003.
var Rule = &rules.Rule{
	ID:    "SCHED003",
	Class: "scheduling-latency",
	Doc: rules.Doc{
		Title: "Runnable goroutines wait long for a CPU",
		Text: `When a goroutine is ready (its network read completed, its lock was released,
it was just created) it joins a run queue and waits for a P. In a saturated
service that queue is long, and the wait adds to every request: in one case a
goroutine waited 250-300 ms from the network poller making it ready to running,
which no profile of the code itself shows.`,
		Evidence: `The execution trace: the delay from runnable to running for every goroutine
made ready within the trace (p50, p90, p99, max), and the same for goroutines
made ready by the network poller; P utilisation (goroutine running time over
trace length × GOMAXPROCS); GOMAXPROCS against the CPU quota; GC stop-the-world
pauses. Needs at least 100 runnable-to-running transitions (20 for the network
figure). Reports p99 from 10 ms: medium; from 50 ms: high. Ps at least 70%
busy read as saturation, less as bursts.`,
		Fix: `If the Ps are busy, the service is saturated: add CPU (cores or replicas) or
shed load (a concurrency limit, admission control, shorter queues), and cut the
CPU each request costs (the CPU findings name where). If GOMAXPROCS exceeds
the container's CPU quota, set it to the quota (Go 1.25 does it by itself). If
the Ps are not busy, the waits come in bursts: bound per-request goroutine
fan-out and look for long stop-the-world pauses.`,
		Before: `1 replica at 2 cores, p99 runnable->running 120 ms`,
		After:  `load spread over 3 replicas (or a concurrency limit), p99 < 1 ms`,
		Caveats: `The trace covers only its own window (1 s by default, at the end of the
collection), so it must be taken under the load being judged. Tracing itself
costs a little CPU. When another rule names a medium or worse CPU cost, this finding is
treated as its symptom: its estimate is capped at half of the cause's, so it ranks behind it.`,
		Since: "0.1",
		Refs: []string{
			"https://pkg.go.dev/runtime/trace",
			"https://pkg.go.dev/runtime/metrics#hdr-Supported_metrics",
		},
	},
	Needs: []rules.Input{rules.Trace},
	Uses:  []rules.Input{rules.System},
	// Waiting for a CPU is usually the symptom of a CPU cost another rule
	// names; running after the others lets it rank behind its cause.
	Fallback: true,
	Check:    check,
}

const (
	minTransitions    = 100
	minNetTransitions = 20
	mediumP99         = 10 * time.Millisecond
	highP99           = 50 * time.Millisecond
	saturated         = 0.70
)

// noTrace is the skip reason when the evidence has no execution trace.
const noTrace = "needs an execution trace (perfdoctor collect takes one; or /debug/pprof/trace?seconds=1 under load)"

// traceOf returns the trace summary, or records why the rule cannot use it.
func traceOf(pass *rules.Pass) *trace.Summary {
	s, err := pass.Evidence.Trace()
	switch {
	case errors.Is(err, evidence.ErrNoTrace):
		pass.Skip(noTrace)
		return nil
	case err != nil:
		pass.Skip("the execution trace could not be read: " + err.Error())
		return nil
	}
	return s
}

func check(pass *rules.Pass) error {
	s := traceOf(pass)
	if s == nil {
		return nil
	}
	all, net := s.SchedLatency, s.NetPollLatency
	if all.Count < minTransitions {
		return nil // too few wakeups in the trace to speak of a p99
	}
	worst, what := all.P99, "runnable goroutines"
	if net.Count >= minNetTransitions && net.P99 > worst {
		worst, what = net.P99, "goroutines woken by the network poller"
	}
	if worst < mediumP99 {
		return nil
	}
	sev := rules.Medium
	if worst >= highP99 {
		sev = rules.High
	}
	queued := 0.0
	if busy := s.Running + s.Runnable; busy > 0 {
		queued = s.Runnable.Seconds() / busy.Seconds()
	}
	f := rules.Finding{
		Severity: sev,
		Impact:   queued,
		Resource: "latency",
		ImpactBasis: "share of goroutines' active time (running or runnable) spent waiting in a run queue: " +
			"the latency that more CPU or less load gives back",
		Evidence: []rules.Fact{
			rules.Duration("runnable -> running p99", all.P99),
			rules.Duration("runnable -> running p50", all.P50),
			rules.Duration("runnable -> running p90", all.P90),
			rules.Duration("runnable -> running max", all.Max),
			rules.Count("runnable -> running transitions", float64(all.Count), ""),
			rules.Share("goroutine active time spent runnable", queued),
			rules.Duration("trace length", s.Window),
		},
	}
	if net.Count > 0 {
		f.Evidence = append(f.Evidence,
			rules.Duration("network poll -> running p99", net.P99),
			rules.Duration("network poll -> running max", net.Max),
			rules.Count("network poll -> running transitions", float64(net.Count), ""))
	}
	util := 0.0
	if s.GOMAXPROCS > 0 && s.Window > 0 {
		util = s.Running.Seconds() / (s.Window.Seconds() * float64(s.GOMAXPROCS))
		f.Evidence = append(f.Evidence,
			rules.Count("GOMAXPROCS (trace)", float64(s.GOMAXPROCS), ""),
			rules.Share("P utilisation (goroutines running / trace length × GOMAXPROCS)", util))
	}
	if s.GC.STW.Count > 0 {
		f.Evidence = append(f.Evidence, rules.Duration("longest stop-the-world pause", s.GC.STW.Max))
	}
	// runtime/metrics (the agent) covers the whole window, the trace its end.
	if rw, ok := pass.Evidence.Runtime(); ok && rw.SchedLatencyCount > 0 {
		f.Evidence = append(f.Evidence,
			rules.Duration("runnable -> running p99 over the window (runtime/metrics /sched/latencies)", rw.SchedLatencyP99),
			rules.Count("scheduling events over the window (runtime/metrics)", float64(rw.SchedLatencyCount), ""))
	}
	settings := pass.Evidence.Settings()
	overQuota := settings.CPUQuota > 0 && s.GOMAXPROCS > 0 && float64(s.GOMAXPROCS) > settings.CPUQuota*1.25
	if settings.CPUQuota > 0 {
		f.Evidence = append(f.Evidence, rules.Count("cgroup CPU quota", settings.CPUQuota, "cores"))
	}

	f.Summary = fmt.Sprintf("%s wait p99 %s for a CPU (p50 %s, max %s)",
		capitalize(what), rules.RoundDuration(worst), rules.RoundDuration(all.P50), rules.RoundDuration(all.Max))
	if what != "runnable goroutines" {
		f.Summary += fmt.Sprintf("; all runnable goroutines p99 %s", rules.RoundDuration(all.P99))
	}
	if util > 0 {
		f.Summary += fmt.Sprintf(", with the Ps %s busy", rules.Percent(util))
	}

	var fix strings.Builder
	switch {
	case overQuota:
		want := int(settings.CPUQuota + 0.999)
		fmt.Fprintf(&fix, "GOMAXPROCS=%d exceeds the %.3g-core CPU quota: the kernel throttles the process's threads mid-work and runnable goroutines wait. Set GOMAXPROCS=%d (Go >= 1.25 follows the quota when GOMAXPROCS is not set in the environment; older: go.uber.org/automaxprocs). %s", s.GOMAXPROCS, settings.CPUQuota, want, rules.RedundantModules(pass.Evidence))
		f.Example = fmt.Sprintf("GOMAXPROCS=%d ./service", want)
	case util >= saturated || util == 0:
		if util == 0 {
			fix.WriteString("The trace does not say how busy the Ps were; if the service is CPU-saturated: ")
		} else {
			fix.WriteString("The service is CPU-saturated: ")
		}
		fix.WriteString("add CPU (more cores or replicas) or shed load (a concurrency limit or admission control, so excess requests fail fast instead of queueing), and cut the CPU each request costs (see the CPU findings for where). ")
		if settings.CPUQuota > 0 && s.GOMAXPROCS > 0 && float64(s.GOMAXPROCS) < settings.CPUQuota-0.5 {
			fmt.Fprintf(&fix, "GOMAXPROCS=%d is below the %.3g-core quota: raise it to use the CPU you pay for. ", s.GOMAXPROCS, settings.CPUQuota)
		}
		f.Example = "limit := make(chan struct{}, 2*runtime.GOMAXPROCS(0)) // admission: acquire per request, 503 when full"
	default:
		fmt.Fprintf(&fix, "The Ps are only %s busy on average, so the waits come in bursts: many goroutines made ready at once (per-request fan-out, timers firing together) or long stop-the-world pauses. Bound the fan-out with a worker pool or errgroup.SetLimit, and check the GC findings. ", rules.Percent(util))
		f.Example = "g.SetLimit(runtime.GOMAXPROCS(0)) // errgroup: bound per-request fan-out"
	}
	fix.WriteString("Verify with a new trace under the same load: p99 runnable -> running should fall below 1 ms.")
	f.Fix = fix.String()
	if settings.CPUQuota == 0 && !pass.Has(rules.System) {
		f.Caveats = append(f.Caveats, "No /proc snapshot of the target: GOMAXPROCS against the CPU quota not checked.")
	}
	deferToCause(&f, pass.Earlier)
	pass.Report(f)
	return nil
}

// deferToCause ranks the wait behind the CPU finding that causes it: when
// another rule explains a medium or worse share of CPU, fixing that frees
// the CPU the goroutines wait for, so the wait's own estimate is capped at
// half of the cause's and the finding says where the cause is.
func deferToCause(f *rules.Finding, earlier []rules.Finding) {
	var cause *rules.Finding
	for i, e := range earlier {
		if e.Resource == "cpu" && e.Severity >= rules.Medium && (cause == nil || e.Impact > cause.Impact) {
			cause = &earlier[i]
		}
	}
	if cause == nil {
		return
	}
	f.Impact = min(f.Impact, cause.Impact/2)
	f.ImpactBasis += fmt.Sprintf("; capped at half of %s's estimate, the CPU cost that makes goroutines wait", cause.Rule)
	f.Caveats = append(f.Caveats, fmt.Sprintf("Likely a symptom: %s (%s) takes %s of CPU; fix it first and trace again.", cause.Rule, cause.Class, rules.Percent(cause.Impact)))
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
