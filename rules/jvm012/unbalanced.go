// Package jvm012 detects parallel work that one thread of a group does
// nearly alone while the others idle (finding class
// jvm-unbalanced-parallelism).
package jvm012

import (
	"fmt"
	"slices"
	"time"

	"github.com/google/pprof/profile"

	"github.com/perfdoctor/perfdoctor/evidence"
	"github.com/perfdoctor/perfdoctor/formats/jfr"
	"github.com/perfdoctor/perfdoctor/internal/human"
	"github.com/perfdoctor/perfdoctor/rules"
	"github.com/perfdoctor/perfdoctor/rules/jvmthreads"
)

// Rule is JVM012.
var Rule = &rules.Rule{
	ID:    "JVM012",
	Class: "jvm-unbalanced-parallelism",
	Doc: rules.Doc{
		Title: "One thread of a parallel group does most of the work",
		Text: `Work split over several threads finishes when the slowest part does. When
one thread gets most of it (a partition by a key that one tenant dominates,
a hash that puts the hot keys together, one queue per worker with one busy
producer, a stage that is single-threaded) the others idle while it runs,
and the job takes as long as that one thread needs: the extra threads and
CPUs buy nothing.`,
		Evidence: `Threads grouped by name without their number ("shard-3" is group "shard",
"pool-1-thread-2" is "pool-1-thread"): the share of the group's CPU samples
(jdk.ExecutionSample) its busiest thread has, from 100 samples of the group.
With k = min(threads, CPUs) the job could run k times as parallel, so the
time an even split saves is 1 - 1 / (k × busiest share). Reports when that
is at least 20% (medium) and the busiest thread ran at least half a CPU or
a quarter of the JVM's samples; high from 40%. Measured here: the balanced fixture (4 shards, even split,
2 CPUs) has its busiest thread at 28% of the samples (nothing to save);
casebook E4 and E5, bad and fixed, spread their pool of 4 threads at 28-30%
for the busiest (nothing to save either); the
unbalanced fixture (one shard of four gets 90% of the work) 93%, which an
even split would finish 46% sooner.`,
		Fix: `Split the work by size, not by key: hash with a salt or split the hot key
(sub-partitions), hand out chunks from a shared queue or a work-stealing pool
(ForkJoinPool, parallel streams over a splittable source) so idle threads
take work from busy ones, and make single-threaded stages parallel or
shorter. Check the group with a per-thread view (JFR's jdk.ThreadCPULoad, or
top -H) after the change.`,
		Before: `int shard = tenantId % shards;   // one tenant sends 90% of the events
queues[shard].add(event);`,
		After: `executor.submit(() -> process(event));   // a shared pool: any idle thread takes the next event
// or, where order per key matters: shard by (tenantId, eventKey) so a hot tenant spreads`,
		Caveats: "Only CPU work is weighed: a thread that waits longest (for I/O or a lock) is not seen as busy here (see JVM010 and JVM011). Groups are told by thread names: threads named alike that do different jobs look unbalanced.",
		Since:   "0.3",
		Refs: []string{
			"https://docs.oracle.com/en/java/javase/21/docs/api/java.base/java/util/concurrent/ForkJoinPool.html",
		},
	},
	Needs: []rules.Input{rules.JVM},
	Uses:  []rules.Input{rules.CPU},
	Check: check,
}

const (
	minGroupSamples = 100
	minBusiestCores = 0.5
	// minOfJVM: a busiest thread short of half a CPU (a starved JVM) still
	// counts when it has a quarter of the JVM's samples.
	minOfJVM     = 0.25
	mediumSaving = 0.20
	highSaving   = 0.40
)

func check(pass *rules.Pass) error {
	s := pass.Evidence.JVM
	span := s.Span()
	cpus := jvmthreads.CPUs(s, 1)
	if span <= 0 || cpus < 2 {
		return nil // one CPU runs one thread at a time whatever the split
	}
	for _, p := range s.Threading.Pools {
		if p.Threads < 2 || p.Samples < minGroupSamples {
			continue
		}
		top := float64(p.BusiestSamples) / float64(p.Samples)
		k := float64(min(p.Threads, cpus))
		saving := 1 - 1/(k*top)
		cores := busiestCores(p, span, cpus)
		ofJVM := float64(p.BusiestSamples) / float64(max(s.ExecutionSamples, 1))
		if saving < mediumSaving || cores < minBusiestCores && ofJVM < minOfJVM {
			continue
		}
		pass.Report(rules.Finding{
			Severity:    rules.Grade(saving, mediumSaving, highSaving),
			Impact:      saving,
			Resource:    "latency",
			ImpactBasis: fmt.Sprintf("time an even split over %d threads would save: 1 - 1 / (%d × the busiest thread's %s of the samples)", int(k), int(k), human.Percent(top)),
			Summary: fmt.Sprintf("Thread group %s: one of its %d threads (%s) ran %s of the group's CPU samples while the others idled; an even split would finish about %s sooner",
				p.Name, p.Threads, p.BusiestSampled, human.Percent(top), human.Percent(saving)),
			Evidence: []rules.Fact{
				rules.Count("threads in the group", float64(p.Threads), ""),
				rules.Share("busiest thread's share of the group's samples", top),
				rules.Count("CPUs the busiest thread used", cores, ""),
				rules.Share("busiest thread's share of the JVM's samples", ofJVM),
				rules.Count("CPU samples of the group", float64(p.Samples), ""),
				rules.Count("CPUs", float64(cpus), ""),
			},
			Fix:       pass.Rule.Doc.Fix,
			Example:   pass.Rule.Doc.Before + "\n->\n" + pass.Rule.Doc.After,
			Caveats:   []string{pass.Rule.Doc.Caveats},
			Locations: rules.Locations(threadSites(pass.Evidence, p.BusiestSampled), "the busiest thread's work"),
		})
	}
	return nil
}

// busiestCores is the CPUs the group's busiest thread used: its mean
// jdk.ThreadCPULoad when recorded, else its execution samples at the
// sampler's period.
func busiestCores(p jfr.Pool, span time.Duration, cpus int) float64 {
	if p.BusiestCPU > 0 {
		return p.BusiestCPU * float64(cpus)
	}
	return float64(p.BusiestSamples) * jfr.SamplePeriod.Seconds() / span.Seconds()
}

// threadSites are the service's code the named thread ran most, from the
// CPU profile's samples of that thread.
func threadSites(ev *evidence.Evidence, thread string) []evidence.Site {
	p := ev.Profile(evidence.CPU)
	if p == nil || thread == "" {
		return nil
	}
	only := &profile.Profile{SampleType: p.SampleType, DefaultSampleType: p.DefaultSampleType, PeriodType: p.PeriodType, Period: p.Period}
	for _, s := range p.Sample {
		if slices.Contains(s.Label["thread"], thread) {
			only.Sample = append(only.Sample, s)
		}
	}
	st := evidence.NewStacks(only, "cpu")
	if st == nil {
		return nil
	}
	first := st.First(rules.IsApplication)
	return st.TopSites(3, func(s evidence.Sample) *evidence.Frame { return first(s) })
}
