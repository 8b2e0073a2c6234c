// Package sched003 detects runnable goroutines waiting long for a CPU,
// from an execution trace (finding class scheduling-latency).
package sched003

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/perfdoctor/perfdoctor/facts"

	"github.com/perfdoctor/perfdoctor/evidence"
	"github.com/perfdoctor/perfdoctor/evidence/trace"
	"github.com/perfdoctor/perfdoctor/internal/human"
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
busy read as saturation, less as bursts. With /proc snapshots at both ends of
the window, the service's CPU (its /proc times, else the CPU profile's
samples) is compared with the host's (/proc/stat: busy and steal): when the
service used under 75% of the CPU it may use (GOMAXPROCS, quota, CPUs) while
the host was at least 85% busy with other processes (half a core or a quarter
of the CPUs) or lost 10% to steal, the wait is host contention, graded low (it
is the host's problem, not the service's: a healthy service on a busy shared
host must not get more), and the prescription is about the host. Without
those snapshots, goroutines runnable half their active time or more while the
Ps were under 70% busy are read the same way: Go hands a ready goroutine to an
idle P at once, so such waits are for the OS to run the Ps' threads.`,
		Fix: `If the Ps are busy, the service is saturated: add CPU (cores or replicas) or
shed load (a concurrency limit, admission control, shorter queues), and cut the
CPU each request costs (the CPU findings name where). If GOMAXPROCS exceeds
the container's CPU quota, set it to the quota (Go 1.25 does it by itself). If
the Ps are not busy, the waits come in bursts: bound per-request goroutine
fan-out and look for long stop-the-world pauses. If the host is busy with
other processes while the service uses well under its share, the fix is on
the host: move the other work or the service, reserve its CPU (requests,
cpusets, cpu.weight), or a larger instance against steal.`,
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
	Uses:  []rules.Input{rules.System, rules.Host, rules.CPU},
	// Waiting for a CPU is usually the symptom of a CPU cost another rule
	// names; running after the others lets it rank behind its cause.
	Fallback: true,
	Facts:    []facts.Key{facts.CoresUsed},
	Check:    check,
}

const (
	minTransitions    = 100
	minNetTransitions = 20
	mediumP99         = 10 * time.Millisecond
	highP99           = 50 * time.Millisecond
	saturated         = 0.70
	// starvedRunnable is the share of active time runnable from which, with
	// the Ps under saturated, the waits are the OS's (see osStarved).
	starvedRunnable = 0.5
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
	host, haveHost := readHost(pass.Evidence, facts.Get(pass.Facts, facts.CoresUsed), s.GOMAXPROCS, settings)
	if haveHost {
		f.Evidence = append(f.Evidence,
			rules.Count("the service's CPU ("+host.procSrc+")", round2(host.proc), "cores"),
			rules.Count("CPU the service may use (GOMAXPROCS, quota, CPUs)", round2(host.share), "cores"),
			rules.Count("host CPU busy (/proc/stat)", round2(host.busy), fmt.Sprintf("cores of %d", host.cpus)),
			rules.Count("other processes' CPU (host busy minus the service)", round2(host.others), "cores"),
			rules.Count("steal (the hypervisor's other guests)", round2(host.steal), "cores"))
	}
	if settings.CPUQuota > 0 {
		f.Evidence = append(f.Evidence, rules.Count("cgroup CPU quota", settings.CPUQuota, "cores"))
	}

	f.Summary = fmt.Sprintf("%s wait p99 %s for a CPU (p50 %s, max %s)",
		capitalize(what), human.RoundDuration(worst), human.RoundDuration(all.P50), human.RoundDuration(all.Max))
	if what != "runnable goroutines" {
		f.Summary += fmt.Sprintf("; all runnable goroutines p99 %s", human.RoundDuration(all.P99))
	}
	if util > 0 {
		f.Summary += fmt.Sprintf(", with the Ps %s busy", human.Percent(util))
	}

	var fix strings.Builder
	contended := haveHost && host.contended()
	// Go wakes an idle P for every goroutine made ready, so goroutines
	// waiting most of their active time while the Ps sat idle were waiting
	// for the OS to run the Ps' threads: the host's CPUs went elsewhere.
	// Bursts leave a goroutine runnable for microseconds, not most of its
	// life (R5, a healthy service on a 2-core host shared with other
	// tests: 97% runnable with the Ps 53% busy).
	osStarved := !haveHost && !overQuota && util > 0 && util < saturated && queued >= starvedRunnable
	switch {
	case contended:
		// The service waits for CPUs the host gave to others: nothing in
		// its code or its fan-out is the cause, and a healthy service on a
		// busy host must not be graded as a problem of its own.
		f.Severity = rules.Low
		f.Summary += fmt.Sprintf("; the host is busy with other work (%.2g of %d cores busy, %.2g of them other processes, %.2g steal) while the service used only %.2g of its %.2g", host.busy, host.cpus, host.others, host.steal, host.proc, host.share)
		f.ImpactBasis += "; the CPU goes to other processes on the host, so the latency comes back when they move, not from a change to the service"
		fmt.Fprintf(&fix, "Host contention, not the service's own saturation: the service used %.2g of the %.2g cores it may use while other processes took %.2g cores", host.proc, host.share, host.others)
		if host.steal >= 0.05*float64(host.cpus) {
			fmt.Fprintf(&fix, " and the hypervisor stole %.2g", host.steal)
		}
		fix.WriteString(". Give the service CPU of its own: move the other work off the host (or the service to a quieter one), reserve its share (a CPU request/limit or cpuset that others cannot take, a dedicated node pool; for steal, a larger or dedicated instance), or lower the other processes' priority (nice, cgroup cpu.weight). ")
		f.Example = "systemd: CPUWeight=1000 for the service, CPUWeight=50 for batch jobs (or pin them apart with cpusets)"
	case osStarved:
		f.Severity = rules.Low
		f.Summary += fmt.Sprintf("; goroutines waited %s of their active time while the Ps were idle: the threads were not on a CPU", human.Percent(queued))
		f.ImpactBasis += "; the waits are for the host's CPUs (other processes, steal, a quota), so they come back when the host is quieter, not from a change to the service"
		fmt.Fprintf(&fix, "The Ps were only %s busy, yet goroutines spent %s of their active time runnable: Go hands a ready goroutine to an idle P at once, so their threads waited for the operating system, not for the service's own work. Look at the host: other processes, steal, a CPU quota (take /proc snapshots with perfdoctor collect on the target's host, or perfdoctor sys). ", human.Percent(util), human.Percent(queued))
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
		fmt.Fprintf(&fix, "The Ps are only %s busy on average, so the waits come in bursts: many goroutines made ready at once (per-request fan-out, timers firing together) or long stop-the-world pauses. Bound the fan-out with a worker pool or errgroup.SetLimit, and check the GC findings. ", human.Percent(util))
		f.Example = "g.SetLimit(runtime.GOMAXPROCS(0)) // errgroup: bound per-request fan-out"
	}
	fix.WriteString("Verify with a new trace under the same load: p99 runnable -> running should fall below 1 ms.")
	f.Fix = fix.String()
	if settings.CPUQuota == 0 && !pass.Has(rules.System) {
		f.Caveats = append(f.Caveats, "No /proc snapshot of the target: GOMAXPROCS against the CPU quota not checked.")
	}
	deferToCause(&f, pass.Earlier, contended)
	if !haveHost {
		f.Caveats = append(f.Caveats, "No /proc snapshots of the host at both ends of the window: host contention (other processes, steal) not told apart from the service's own saturation.")
	}
	pass.Report(f)
	return nil
}

// host is the window's CPU on the host against the service's own, in cores.
type host struct {
	proc, share, busy, others, steal float64
	cpus                             int
	procSrc                          string
}

// contended: the service used well under the CPU it may use while the host
// was busy with other processes or lost CPU to steal.
func (h host) contended() bool {
	full := h.busy+h.steal >= 0.85*float64(h.cpus)
	return h.proc < 0.75*h.share && full && (h.others >= max(0.5, 0.25*float64(h.cpus)) || h.steal >= 0.1*float64(h.cpus))
}

// readHost compares the process's CPU (its /proc times, else the CPU
// profile's samples) with the host's /proc/stat over the window.
func readHost(ev *evidence.Evidence, cores float64, gomaxprocs int, settings evidence.Settings) (host, bool) {
	d, ok := ev.SystemDelta()
	if !ok || len(d.CPUs) == 0 || d.Seconds <= 0 {
		return host{}, false
	}
	t := d.CPUTotal()
	h := host{cpus: len(d.CPUs), busy: (t.User + t.System + t.IRQ + t.SoftIRQ) / d.Seconds, steal: t.Steal / d.Seconds}
	if a, b := d.Start.Process, d.End.Process; a != nil && b != nil && a.PID == b.PID {
		h.proc = (b.UserCPUSeconds + b.SystemCPUSeconds - a.UserCPUSeconds - a.SystemCPUSeconds) / d.Seconds
		h.procSrc = "/proc process times"
	} else if cores > 0 {
		h.proc = cores
		h.procSrc = "CPU profile samples"
	} else {
		return host{}, false
	}
	h.share = float64(h.cpus)
	if gomaxprocs > 0 {
		h.share = min(h.share, float64(gomaxprocs))
	}
	if settings.CPUQuota > 0 {
		h.share = min(h.share, settings.CPUQuota)
	}
	h.others = max(0, h.busy-h.proc)
	return h, true
}

func round2(v float64) float64 { return math.Round(v*100) / 100 }

// deferToCause ranks the wait behind the CPU finding that causes it: when
// another rule explains a medium or worse share of CPU, fixing that frees
// the CPU the goroutines wait for, so the wait's own estimate is capped at
// half of the cause's and the finding says where the cause is.
//
// Under host contention the CPU finding is not the cause, but the wait
// still ranks behind what the service itself can change.
func deferToCause(f *rules.Finding, earlier []rules.Finding, hostContention bool) {
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
	if hostContention {
		// Other processes take the CPU: the service's own cost is not
		// the cause, so no link, only the cap.
		f.ImpactBasis += fmt.Sprintf("; capped at half of %s's estimate, so the service's own costs rank first", cause.Rule)
		return
	}
	f.CausedBy = cause.ID
	f.CauseReason = fmt.Sprintf("%s (%s) takes %s of CPU: the CPU the goroutines wait for", cause.ID, cause.Class, human.Percent(cause.Impact))
	f.ImpactBasis += fmt.Sprintf("; capped at half of %s's estimate, the CPU cost that makes goroutines wait", cause.Rule)
	f.Caveats = append(f.Caveats, fmt.Sprintf("Likely a symptom: %s (%s) takes %s of CPU; fix it first and trace again.", cause.Rule, cause.Class, human.Percent(cause.Impact)))
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
