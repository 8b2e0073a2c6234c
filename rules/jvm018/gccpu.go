// Package jvm018 detects a JVM whose garbage collector takes a large share
// of its CPU (finding class jvm-gc-cpu).
package jvm018

import (
	"fmt"
	"time"

	"github.com/perfdoctor/perfdoctor/facts"
	"github.com/perfdoctor/perfdoctor/facts/frames"

	"github.com/perfdoctor/perfdoctor/evidence"
	"github.com/perfdoctor/perfdoctor/formats/jfr"
	"github.com/perfdoctor/perfdoctor/internal/human"
	"github.com/perfdoctor/perfdoctor/rules"
)

// Rule is JVM018.
var Rule = &rules.Rule{
	ID:    "JVM018",
	Class: "jvm-gc-cpu",
	Doc: rules.Doc{
		Title: "The JVM's garbage collector takes a large share of its CPU",
		Text: `The collector's threads copy and mark live objects on CPUs the application
could use. A high allocation rate, a heap with little headroom over its live
set, or a collector chosen for pause times rather than throughput can make
the GC the JVM's biggest consumer of CPU while every pause stays short. The
pauses are a latency question, reported by JVM003; this rule weighs the CPU
the collector takes, paused or concurrent.`,
		Evidence: `From a JFR recording: the process's CPU time during collection pauses
(jdk.GCCPUTime, G1, Parallel and Serial, JDK 17.0.15 and later), and the
concurrent phases (jdk.GCPhaseConcurrent: G1's marking, all of ZGC's work)
estimated as their wall time times the concurrent GC threads, capped by
the JVM CPU that Java threads did not use (jdk.ThreadCPULoad); both against
the JVM's CPU time (jdk.CPULoad). When the CPU profile sees the collector's
own threads (async-profiler or perf, which sample native frames), the share
of samples in the collector's frames is used instead. Reports from 20% of
the JVM's CPU (medium), high from 30%, when the JVM used at least one CPU
second. The share is split by what starts the work: the old generation's
collection (G1's marking cycle and the remembered sets' rebuild, the
Parallel and Serial collectors' full collections, from the profiled
threads' tasks; with JFR alone, G1's concurrent phases), which the heap's
occupancy starts, and the young collections, which allocation starts. When
the old generation's is most of it, the fix leads with headroom: ZooKeeper
under a tight heap, 26% of the samples of the collector's 30%; GCHeavy
(rules/testdata/jvm), pauses 81% of the JVM's CPU and no concurrent CPU
left over. The healthy programs recorded here (rules/testdata/jvm) measure
2.6% and 5.4% with G1 (JDK 17, 25) and 0% with ZGC (JDK 25: its concurrent
phases' 13% before the cap, which the Java threads' CPU took). Marking beside light
pauses is graded at most low: when the pauses' own CPU (jdk.GCCPUTime) is
under 6% of the JVM's and no evacuation failed (jdk.EvacuationFailed), the
heap holds its live set without the collector having to compact or fail
over, and the rest of its share is concurrent marking. Measured on
ZooKeeper at -Xmx160m over 140 MB of znodes, -Xmx1g the change: under
reads, the collector's samples 30% of the JVM's CPU (marking and the
remembered sets' rebuild 26%), pauses 3.3%, no evacuation failure, and
the larger heap took 0.86x the CPU per read [0.74, 1.0004] (12 rounds,
not significant); under writes, the same marking share (26%) but pauses
11.9%, 42 evacuation failures and full collections (the longest pause
166 ms), and the larger heap took 0.51x the CPU per write [0.47, 0.56].
The line sits between the two (their geometric mean, 6.3%, rounded); the
JVM's share of the machine, which this grade once read, did not separate
them (0.55 and 0.56 of 2 CPUs). Locations are the allocation profile's
top sites by bytes.`,
		Fix:     allocateFirst + " " + chooseCollector,
		Before:  `java -Xmx128m -jar app.jar     # live set ~90 MB`,
		After:   `java -Xmx512m -jar app.jar`,
		Caveats: "The estimate of concurrent work assumes every concurrent GC thread busy through each phase; G1's marking often yields to pauses, so the events-based share is an upper bound when marking runs long.",
		Since:   "0.2",
		Refs:    []string{"https://docs.oracle.com/en/java/javase/21/gctuning/"},
	},
	Needs: []rules.Input{rules.JVM},
	Uses:  []rules.Input{rules.CPU, rules.Allocs},
	Facts: []facts.Key{facts.AllocStacks, facts.CPUStacks},
	Check: check,
}

const (
	mediumShare = 0.20
	highShare   = 0.30
	// minCPU is the least JVM CPU time from which shares are judged.
	minCPU = time.Second
	// lightPauses is the pauses' share of the JVM's CPU under which, with
	// no evacuation failure, the collector's work is marking beside
	// requests and graded at most low (measurements in Doc.Evidence:
	// ZooKeeper's reads 3.3%, its writes 11.9%).
	lightPauses = 0.06
)

// The fix's parts: the order of the first two follows what starts the
// collector's work (headroomFirst).
const (
	allocateFirst = `Allocate less first: the allocation profile's top sites drive the
collector's work. Then give the heap headroom over its live set (-Xmx, or
-XX:MaxRAMPercentage in containers): each collection then frees more for
the same work.`
	chooseCollector = `Choose the collector for the goal: Parallel
(-XX:+UseParallelGC) spends the least CPU for batch throughput; G1 trades
some CPU for pauses (a higher -XX:MaxGCPauseMillis lets it collect more
per pause); generational ZGC (JDK 21 and later, the default ZGC from JDK
23) costs far less CPU than single-generation ZGC.`
)

// Frames are the collector's own functions (frames.JVMGCFrames).
var Frames = frames.JVMGCFrames

func check(pass *rules.Pass) error {
	ev := pass.Evidence
	s := ev.JVM
	span := s.Span()
	jvmCPU := time.Duration(s.JVMCPU * float64(s.HWThreads) * float64(span))
	concurrent := concurrentCPU(s, jvmCPU, span)
	var share float64
	var basis string
	// A profiler that samples the GC threads (async-profiler, perf) measures
	// their share directly; JFR's own sampler never sees them.
	cpu := facts.Get(pass.Facts, facts.CPUStacks)
	profiled := cpu != nil && cpu.Share(Frames) > 0 && evidence.SampleCount(ev.Profile(evidence.CPU)) >= rules.MinCPUSamples
	switch {
	case profiled:
		share = cpu.Share(Frames)
		basis = "share of CPU samples in the collector's own frames (the profiler samples the GC threads)"
	case s.GC.CPUCollections == 0 && s.GC.Concurrent == 0:
		return nil
	case jvmCPU < minCPU:
		pass.Skip(fmt.Sprintf("the JVM used %s of CPU in the recording (jdk.CPULoad); at least %s is needed to weigh the collector's share", human.RoundDuration(jvmCPU), minCPU))
		return nil
	default:
		share = (s.GC.CPU + concurrent).Seconds() / jvmCPU.Seconds()
		basis = "the collector's CPU time (measured during pauses, estimated for concurrent phases) against the JVM's CPU time"
	}
	share = min(share, 1)
	if share < mediumShare {
		return nil
	}
	split := splitPhases(cpu, profiled, s, concurrent.Seconds()/max(jvmCPU.Seconds(), 1e-9))
	f := rules.Finding{
		Severity:    rules.Grade(share, mediumShare, highShare),
		Impact:      share,
		Resource:    "cpu",
		ImpactBasis: basis,
		Summary: fmt.Sprintf("The garbage collector takes %s of the JVM's CPU (%s, %d collections)",
			human.Percent(share), s.GC.Young+" / "+s.GC.Old, s.GC.Collections),
		Evidence: []rules.Fact{
			rules.Share("GC share of the JVM's CPU", share),
			rules.Duration("CPU during collection pauses (jdk.GCCPUTime)", s.GC.CPU),
			rules.Duration("concurrent GC CPU, estimated", concurrent),
			rules.Duration("JVM CPU in the recording (jdk.CPULoad)", jvmCPU),
			rules.Duration("concurrent phases, wall time", s.GC.Concurrent),
		},
		Fix:     fix(split, share) + advice(s),
		Example: pass.Rule.Doc.Before + "\n->\n" + pass.Rule.Doc.After,
		Caveats: []string{"Pause times are JVM003's finding; this one is the CPU the collector takes."},
	}
	f.Evidence = append(f.Evidence, split.facts(share)...)
	if !profiled && s.GC.Concurrent > 0 {
		f.Caveats = append(f.Caveats, pass.Rule.Doc.Caveats)
	}
	// Marking beside light pauses: the heap holds its live set without
	// compacting or failing over, and a larger heap measured no
	// significant gain (Doc.Evidence).
	if pauses := s.GC.CPU.Seconds() / max(jvmCPU.Seconds(), 1e-9); s.GC.CPUCollections > 0 && pauses < lightPauses && s.VM.EvacuationFailures == 0 {
		f.Severity = min(f.Severity, rules.Low)
		f.Summary += fmt.Sprintf("; mostly concurrent marking, its pauses light (%s of the JVM's CPU, no evacuation failure)", human.Percent(pauses))
		f.Caveats = append(f.Caveats, fmt.Sprintf("The collector's pauses took %s of the JVM's CPU and none failed to evacuate: the heap "+
			"holds its live set, and the rest of the collector's share is marking over it. A larger heap makes the marking rare, "+
			"but on a server measured so (ZooKeeper's reads) it saved no significant CPU per request; it is a margin against a "+
			"burst of writes more than a saving.", human.Percent(pauses)))
	}
	if profiled {
		f.Frames = cpu.Matched(Frames, 8)
	}
	// The collector's work follows allocation: name where the bytes come from.
	if allocs := facts.Get(pass.Facts, facts.AllocStacks); allocs != nil {
		outsideJDK := allocs.First(func(fn string) bool { return !evidence.IsJDK(fn) && fn != "[unknown]" })
		f.Locations = rules.Locations(allocs.TopSites(5, outsideJDK), "allocation site (bytes)")
	}
	f.Claim = &rules.Claim{Level: rules.LevelRuntime, CPU: facts.Get(pass.Facts, facts.CPUStacks).Has(Frames), AllocDriven: true,
		Grade: func(impact float64) rules.Severity { return rules.Grade(impact, mediumShare, highShare) }}
	pass.Report(f)
	return nil
}

// concurrentCPU estimates the CPU of the concurrent phases: their wall time
// times the concurrent threads, at most the JVM CPU that neither the pauses
// nor the Java threads (jdk.ThreadCPULoad) account for.
func concurrentCPU(s *jfr.Summary, jvmCPU, span time.Duration) time.Duration {
	if s.GC.Concurrent <= 0 {
		return 0
	}
	est := s.GC.Concurrent * time.Duration(max(s.GC.ConcThreads, 1))
	java := s.ThreadsCPU
	if java == 0 { // a summary written before ThreadsCPU: the busiest 20
		for _, t := range s.Threads {
			java += t.User + t.System
		}
	}
	room := jvmCPU - s.GC.CPU - time.Duration(java*float64(s.HWThreads)*float64(span))
	return max(min(est, room), 0)
}

// fix leads with the heap's headroom when the old generation's collection
// is most of the collector's work: the live set fills the heap, and
// allocating less only spaces the cycles out.
func fix(p phases, share float64) string {
	if !p.oldCycleLed(share) {
		return allocateFirst + " " + chooseCollector
	}
	return fmt.Sprintf("The old generation's collection takes %s of the JVM's CPU, most of the collector's %s: the live set "+
		"fills the heap, so the collector starts a cycle over the old generation as soon as the last one ends (G1: at the "+
		"first young collection with the old generation over its initiating threshold, 45%% of the heap by default). Give "+
		"the heap headroom over its live set first (-Xmx, or -XX:MaxRAMPercentage in containers; the live set is the heap's "+
		"occupancy after a full or mixed collection: jcmd PID GC.heap_info), which makes those cycles rare; allocating less "+
		"only spaces them out. Then allocate less: the allocation profile's top sites drive the young collections. ",
		human.Percent(p.oldCycle), human.Percent(share)) + chooseCollector
}

// advice adds what the collector and release in use call for.
func advice(s *jfr.Summary) string {
	jdk := s.JDK()
	switch {
	case s.GC.Young == "DefNew" && s.HWThreads >= 2:
		return fmt.Sprintf(" This JVM runs the Serial collector on %d hardware threads: the JVM picks it by itself under 2 CPUs or 1792 MB; -XX:+UseParallelGC or -XX:+UseG1GC spreads the work.", s.HWThreads)
	case s.GC.Old == "Z" && jdk >= 21 && jdk < 23:
		return fmt.Sprintf(" This JVM (JDK %d) runs single-generation ZGC: -XX:+ZGenerational collects young objects for far less CPU.", jdk)
	case s.GC.Old == "Z" && jdk > 0 && jdk < 21:
		return fmt.Sprintf(" This JVM (JDK %d) has only single-generation ZGC: generational ZGC (JDK 21 and later) or G1 costs less CPU.", jdk)
	}
	return ""
}
