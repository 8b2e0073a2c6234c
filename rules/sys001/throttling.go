// Package sys001 detects a container running into its CPU quota (finding
// class cpu-throttling).
package sys001

import (
	"fmt"

	"github.com/perfdoctor/perfdoctor/internal/human"
	"github.com/perfdoctor/perfdoctor/rules"
)

// Rule is SYS001.
var Rule = &rules.Rule{
	ID:    "SYS001",
	Class: "cpu-throttling",
	Doc: rules.Doc{
		Title: "The container is throttled by its CPU quota",
		Text: `A cgroup CPU quota (Kubernetes limits.cpu, docker --cpus) lets the group run
quota microseconds per period (100 ms by default). A process with more busy
threads than the quota uses it up early in the period and then every thread
stops until the next one: tail latency grows by up to the rest of the period,
even when average CPU use looks well below the limit.`,
		Evidence: `The cgroup's nr_periods, nr_throttled and throttled time (v1 cpu.stat
throttled_time, v2 cpu.stat throttled_usec) over the window. Throttled periods
share: low from 5%, medium from 10%, high from 25%.`,
		Fix: `Make the process fit its quota: GOMAXPROCS no higher than the quota (Go 1.25
and later do it by themselves unless GOMAXPROCS is set; older Go:
go.uber.org/automaxprocs), fewer busy threads, less CPU per request. Or give it
the CPU: a higher limit, or no CPU limit with a request (Kubernetes), so bursts
are not cut at each period.`,
		Before: `limits.cpu: 1, GOMAXPROCS=8`,
		After:  `limits.cpu: 2 (or GOMAXPROCS=1 on Go < 1.25)`,
		Since:  "0.1",
		Refs:   []string{"https://docs.kernel.org/scheduler/sched-bwc.html"},
	},
	Needs: []rules.Input{rules.System, rules.Host},
	Check: check,
}

const low, medium, high = 0.05, 0.10, 0.25

func check(pass *rules.Pass) error {
	d, _ := pass.Evidence.SystemDelta()
	s, e := d.Start.Cgroup, d.End.Cgroup
	if s == nil || e == nil || e.CPUQuotaCores == 0 {
		return nil // no quota, nothing to be throttled by
	}
	if e.NrPeriods <= s.NrPeriods || e.NrThrottled < s.NrThrottled {
		return nil
	}
	periods := e.NrPeriods - s.NrPeriods
	throttled := e.NrThrottled - s.NrThrottled
	share := float64(throttled) / float64(periods)
	if share < low {
		return nil
	}
	var stalled float64 // seconds of throttling per second of window
	if e.ThrottledUsec >= s.ThrottledUsec && d.Seconds > 0 {
		stalled = float64(e.ThrottledUsec-s.ThrottledUsec) / 1e6 / d.Seconds
	}
	f := rules.Finding{
		Severity:    rules.Grade(share, medium, high),
		Impact:      share,
		Resource:    "latency",
		ImpactBasis: "share of scheduling periods in which the cgroup ran out of quota and all its threads waited",
		Summary: fmt.Sprintf("throttled in %s of CPU periods under a %.2g-CPU quota (%.2f s stalled per second)",
			human.Percent(share), e.CPUQuotaCores, stalled),
		Evidence: []rules.Fact{
			rules.Share("throttled periods", share),
			rules.Count("periods in the window", float64(periods), ""),
			rules.Count("CPU quota", e.CPUQuotaCores, "CPUs"),
			rules.Count("throttled time per second", stalled, "s/s"),
			rules.Text("cgroup", fmt.Sprintf("v%d %s", e.Version, e.Path)),
		},
		Fix: rules.RedundantModules(pass.Evidence) + pass.Rule.Doc.Fix,
	}
	if g := pass.Evidence.Settings(); g.GOMAXPROCS > 0 {
		f.Evidence = append(f.Evidence, rules.Count("GOMAXPROCS", float64(g.GOMAXPROCS), ""))
	}
	pass.Report(f)
	return nil
}
