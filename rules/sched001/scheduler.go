// Package sched001 detects CPU burnt by the Go scheduler looking for work,
// often because GOMAXPROCS exceeds the CPU the container may use (finding
// class scheduler-overhead).
package sched001

import (
	"fmt"
	"math"

	"github.com/perfdoctor/perfdoctor/facts"
	"github.com/perfdoctor/perfdoctor/facts/frames"

	"github.com/perfdoctor/perfdoctor/evidence"
	"github.com/perfdoctor/perfdoctor/internal/human"
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
(medium from 20%, high from 30%: healthy services saturated by their load on
two cores, GOMAXPROCS = CPUs, measured up to 13%), or GOMAXPROCS above the
quota (at least medium, high from 10%). Without a /proc snapshot (profiles
saved by hand) the CPUs are unknown: GOMAXPROCS from the execution trace at
8 or more Ps per core of CPU the profile shows in use counts as
oversubscribed (healthy services here run at most 4). Scheduler time under goroutine churn
belongs to that finding; under an oversubscribed GOMAXPROCS, to this one.`,
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
	Facts: []facts.Key{facts.CPUStacks, facts.CoresUsed},
	Check: check,
}

// Scheduler shares when GOMAXPROCS fits the CPUs. Healthy net/http
// services under load on two cores measured 1-6% (casebook control and most
// fixed variants), 9% (A3 fixed, a goroutine per connection plus handoffs)
// and 12-13% (E2 fixed, and services saturated by a load generator on the
// same cores): that much is the price of concurrency, so medium starts
// well above it.
const (
	minShare    = 0.05
	mediumShare = 0.20
	highShare   = 0.30
	// overHighShare grades an oversubscribed GOMAXPROCS: its scheduler time
	// is recovered by a setting, not by code.
	overHighShare = 0.10
	// idlePsPerCore is how many Ps per core of work make GOMAXPROCS
	// oversubscribed when the CPU count is unknown: healthy services here
	// run 2 Ps for 0.5-1.8 cores of work (at most 4 per core); casebook A3
	// and R4 run 64-256 Ps for under 2.
	idlePsPerCore = 8
)

func check(pass *rules.Pass) error {
	if !pass.EnoughCPU() {
		return nil
	}
	cpu := facts.Get(pass.Facts, facts.CPUStacks)
	share := cpu.Share(frames.SchedulerFrames)
	s := pass.Evidence.Settings()
	// The CPU the Ps compete for: the cgroup quota, or without one the CPUs
	// the process may run on (a GOMAXPROCS forced above them oversubscribes
	// just the same).
	limit, limitName := s.CPUQuota, fmt.Sprintf("%.3g-core CPU quota", s.CPUQuota)
	if limit == 0 && s.NumCPU > 0 {
		limit, limitName = float64(s.NumCPU), fmt.Sprintf("%d CPUs the process may use", s.NumCPU)
	}
	over := limit > 0 && s.GOMAXPROCS > 0 && float64(s.GOMAXPROCS) > limit*1.25 && s.GOMAXPROCS > procsFor(limit, s)
	// Without /proc (profiles saved by hand) the CPUs are unknown, but the
	// Ps are in the trace and the CPU the process used is in the profile:
	// Ps that outnumber the cores of work many times over spin looking
	// for it, whatever the machine has, and fewer Ps is the fix.
	procs, procsSrc := s.GOMAXPROCS, s.GOMAXPROCSSrc
	used := facts.Get(pass.Facts, facts.CoresUsed)
	if limit == 0 {
		if ts, err := pass.Evidence.Trace(); err == nil && ts.GOMAXPROCS > 0 {
			procs, procsSrc = ts.GOMAXPROCS, "execution trace"
		}
		if procs > 0 && used > 0 && float64(procs) >= idlePsPerCore*used && share >= minShare {
			over, limit = true, math.Max(math.Ceil(used), 1)
			limitName = fmt.Sprintf("%.2g cores the process used (the CPU count is unknown without a /proc snapshot)", used)
		}
	}
	if share < minShare && !over {
		return nil
	}
	f := rules.Finding{
		Severity:    rules.Grade(share, mediumShare, highShare),
		Resource:    "cpu",
		Impact:      share / 2,
		ImpactBasis: "half of the scheduler's share of CPU: matching GOMAXPROCS to the quota and cutting goroutine handoffs removes the spinning, not the scheduling itself",
		Evidence:    []rules.Fact{rules.Share("scheduler share of CPU", share)},
		Frames:      cpu.Matched(frames.SchedulerFrames, 10),
		Summary:     fmt.Sprintf("The Go scheduler spends %s of CPU looking for work", human.Percent(share)),
		Fix:         "Prefer fewer, longer-lived goroutines on the hot path; hand work to a bounded set of workers instead of a new goroutine per small task.",
	}
	if procs > 0 {
		f.Evidence = append(f.Evidence, rules.Count("GOMAXPROCS", float64(procs), ""), rules.Text("GOMAXPROCS source", procsSrc))
	}
	if used > 0 {
		f.Evidence = append(f.Evidence, rules.Count("cores used (CPU profile)", math.Round(used*100)/100, "cores"))
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
		want := procsFor(limit, s)
		f.Summary = fmt.Sprintf("GOMAXPROCS=%d exceeds the %s; the scheduler spends %s of CPU", procs, limitName, human.Percent(share))
		f.Fix = fmt.Sprintf("Set GOMAXPROCS=%d to match the %s, or leave it unset: Go >= 1.25 follows the CPU limit when GOMAXPROCS is not in the environment (on older Go use go.uber.org/automaxprocs). %s%s", want, limitName, rules.RedundantModules(pass.Evidence), f.Fix)
		f.Example = fmt.Sprintf("GOMAXPROCS=%d ./service", want)
		f.Config = &rules.ConfigFix{Gain: share * (1 - limit/float64(procs)), Changes: []rules.ConfigChange{
			{Kind: rules.ConfigEnv, Name: "GOMAXPROCS", Value: fmt.Sprint(want), Now: fmt.Sprint(procs)}}}
		// A setting fixes it without code: from 10% of CPU that is high.
		f.Severity = max(rules.Grade(share, 0, overHighShare), rules.Medium)
		f.Impact = max(f.Impact, share*(1-limit/float64(procs)))
	}
	// Oversubscription is a setting the user can change, so it owns the
	// scheduler's time over the goroutine churn that also shows in it.
	f.Claim = &rules.Claim{Level: rules.LevelRuntime, CPU: cpu.Has(frames.SchedulerFrames),
		Grade: func(impact float64) rules.Severity { return rules.Grade(2*impact, mediumShare, highShare) }}
	if over {
		f.Claim.Level, f.Claim.Grade = rules.LevelConfig, nil
	}
	pass.Report(f)
	return nil
}

// procsFor is the GOMAXPROCS to prescribe for limit cores: rounded up,
// and for a CPU quota at least 2 (within the CPUs the process may use), as
// Go's own default since 1.25 does (runtime.adjustCgroupGOMAXPROCS): the
// prescription must never be below what the runtime would choose unset.
func procsFor(limit float64, s evidence.Settings) int {
	want := int(math.Ceil(limit - 1e-9))
	if s.CPUQuota > 0 && limit == s.CPUQuota {
		want = max(want, 2)
		if s.NumCPU > 0 {
			want = min(want, s.NumCPU)
		}
	}
	return max(want, 1)
}

// schedState is the scheduler's state at the end of the window: from Go
// 1.26's runtime/metrics (goroutines waiting for a P, in system calls or
// cgo, the runtime's threads) when the agent served them, else the thread
// count of the /proc snapshot.
func schedState(ev *evidence.Evidence) []rules.Fact {
	var shown []rules.Fact
	rw, ok := ev.Runtime()
	if ok && rw.Has(evidence.MetricGoroutinesRunnable) {
		shown = append(shown,
			rules.Count("goroutines waiting for a P (runtime/metrics)", rw.Runnable, ""),
			rules.Count("goroutines in system calls or cgo (runtime/metrics)", rw.NotInGo, ""))
	}
	switch {
	case ok && rw.Has(evidence.MetricThreads):
		shown = append(shown, rules.Count("OS threads (runtime/metrics)", rw.Threads, ""))
	case ev.SystemEnd != nil && ev.SystemEnd.Process != nil && ev.SystemEnd.Process.Threads > 0:
		shown = append(shown, rules.Count("OS threads (/proc)", float64(ev.SystemEnd.Process.Threads), ""))
	}
	return shown
}
