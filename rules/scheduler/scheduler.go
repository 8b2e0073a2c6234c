// Package scheduler detects CPU burnt by the Go scheduler looking for work,
// often because GOMAXPROCS exceeds the CPU the container may use (finding
// class scheduler-overhead).
package scheduler

import (
	"fmt"

	"github.com/perfdoctor/perfdoctor/evidence"
	"github.com/perfdoctor/perfdoctor/rules"
)

// Rule is SCHED001.
var Rule = &rules.Rule{
	ID:    "SCHED001",
	Class: "scheduler-overhead",
	Doc: rules.Doc{
		Title: "The Go scheduler burns CPU looking for work",
		Text: `Idle Ps spin in findRunnable, steal work from each other and sleep and wake
threads through futex calls. A little is normal; a lot means many short-lived
goroutines handing work back and forth, or more Ps (GOMAXPROCS) than the CPU
the container is allowed, so threads are throttled mid-spin.`,
		Evidence: `CPU share of samples in runtime.schedule, findRunnable (findrunnable before
Go 1.21), stealWork, runqgrab, wakep, startm and stopm; GOMAXPROCS (from the
environment, or inferred from the Go version: since 1.25 the runtime follows
the cgroup limit) against the cgroup CPU quota (v1 cpu.cfs_quota_us, v2
cpu.max) and the CPUs the process may use. Reports from 5% scheduler share
(medium from 12%, high from 25%: healthy services under load measured up to
9%), or GOMAXPROCS above the quota (one grade up, at least medium).`,
		Fix: `Make GOMAXPROCS match the CPU quota: Go 1.25 and later do it by themselves
(unless GOMAXPROCS is set in the environment); on older Go set GOMAXPROCS or
import go.uber.org/automaxprocs. Then prefer fewer, longer-lived goroutines on
the hot path over handing each small piece of work to a new one.`,
		Before: `GOMAXPROCS unset, Go 1.22, 7-CPU quota on a 64-core host: 64 Ps`,
		After:  `GOMAXPROCS=7 (or Go >= 1.25, or automaxprocs)`,
		Caveats: `Part of the scheduler's share is the price of concurrency itself; expect
to recover a fraction, not all of it.`,
		Since: "0.1",
		Refs:  []string{"https://go.dev/doc/go1.25#container-aware-gomaxprocs"},
	},
	Needs: []rules.Input{rules.CPU},
	Uses:  []rules.Input{rules.System},
	Check: check,
}

// Frames is the scheduler's work-finding family.
var Frames = evidence.FuncPrefix(
	"runtime.schedule", "runtime.findRunnable", "runtime.findrunnable",
	"runtime.stealWork", "runtime.runqgrab", "runtime.wakep",
	"runtime.startm", "runtime.stopm",
)

// Scheduler shares when GOMAXPROCS fits the CPUs. A healthy net/http
// service under load on two cores measured 1-5% (casebook control) and up to
// 9% (A3 fixed, a goroutine per connection plus handoffs): that much is the
// price of concurrency, so medium starts above it.
const (
	minShare    = 0.05
	mediumShare = 0.12
	highShare   = 0.25
)

func check(pass *rules.Pass) error {
	if !pass.EnoughCPU() {
		return nil
	}
	cpu := pass.Evidence.CPUStacks()
	share := cpu.Share(Frames)
	s := pass.Evidence.Settings()
	// The CPU the Ps compete for: the cgroup quota, or without one the CPUs
	// the process may run on (a GOMAXPROCS forced above them oversubscribes
	// just the same).
	limit, limitName := s.CPUQuota, fmt.Sprintf("%.3g-core CPU quota", s.CPUQuota)
	if limit == 0 && s.NumCPU > 0 {
		limit, limitName = float64(s.NumCPU), fmt.Sprintf("%d CPUs the process may use", s.NumCPU)
	}
	over := limit > 0 && s.GOMAXPROCS > 0 && float64(s.GOMAXPROCS) > limit*1.25
	if share < minShare && !over {
		return nil
	}
	f := rules.Finding{
		Severity:    rules.Grade(share, mediumShare, highShare),
		Resource:    "cpu",
		Impact:      share / 2,
		ImpactBasis: "half of the scheduler's share of CPU: matching GOMAXPROCS to the quota and cutting goroutine handoffs removes the spinning, not the scheduling itself",
		Evidence:    []rules.Fact{rules.Share("scheduler share of CPU", share)},
		Frames:      cpu.Matched(Frames, 10),
		Summary:     fmt.Sprintf("The Go scheduler spends %s of CPU looking for work", rules.Percent(share)),
		Fix:         "Prefer fewer, longer-lived goroutines on the hot path; hand work to a bounded set of workers instead of a new goroutine per small task.",
	}
	if s.GOMAXPROCS > 0 {
		f.Evidence = append(f.Evidence, rules.Count("GOMAXPROCS", float64(s.GOMAXPROCS), ""), rules.Text("GOMAXPROCS source", s.GOMAXPROCSSrc))
	}
	f.Evidence = append(f.Evidence, schedState(pass.Evidence)...)
	if s.NumCPU > 0 {
		f.Evidence = append(f.Evidence, rules.Count("CPUs the process may use", float64(s.NumCPU), ""))
	}
	if s.CPUQuota > 0 {
		f.Evidence = append(f.Evidence, rules.Count("cgroup CPU quota", s.CPUQuota, "cores"))
	} else if !pass.Has(rules.System) {
		f.Caveats = append(f.Caveats, "No /proc snapshot of the target: GOMAXPROCS against the CPU quota not checked (collect on the target's host).")
	}
	if over {
		want := int(limit + 0.999)
		f.Summary = fmt.Sprintf("GOMAXPROCS=%d exceeds the %s; the scheduler spends %s of CPU", s.GOMAXPROCS, limitName, rules.Percent(share))
		f.Fix = fmt.Sprintf("Set GOMAXPROCS=%d to match the %s, or leave it unset: Go >= 1.25 follows the CPU limit when GOMAXPROCS is not in the environment (on older Go use go.uber.org/automaxprocs). %s%s", want, limitName, rules.RedundantModules(pass.Evidence), f.Fix)
		f.Example = fmt.Sprintf("GOMAXPROCS=%d ./service", want)
		f.Severity = max(f.Severity+1, rules.Medium)
		f.Severity = min(f.Severity, rules.High)
		f.Impact = max(f.Impact, share*(1-limit/float64(s.GOMAXPROCS)))
	}
	pass.Report(f)
	return nil
}

// schedState is the scheduler's state at the end of the window: from Go
// 1.26's runtime/metrics (goroutines waiting for a P, in system calls or
// cgo, the runtime's threads) when the agent served them, else the thread
// count of the /proc snapshot.
func schedState(ev *evidence.Evidence) []rules.Fact {
	var facts []rules.Fact
	rw, ok := ev.Runtime()
	if ok && rw.Has(evidence.MetricGoroutinesRunnable) {
		facts = append(facts,
			rules.Count("goroutines waiting for a P (runtime/metrics)", rw.Runnable, ""),
			rules.Count("goroutines in system calls or cgo (runtime/metrics)", rw.NotInGo, ""))
	}
	switch {
	case ok && rw.Has(evidence.MetricThreads):
		facts = append(facts, rules.Count("OS threads (runtime/metrics)", rw.Threads, ""))
	case ev.SystemEnd != nil && ev.SystemEnd.Process != nil && ev.SystemEnd.Process.Threads > 0:
		facts = append(facts, rules.Count("OS threads (/proc)", float64(ev.SystemEnd.Process.Threads), ""))
	}
	return facts
}
