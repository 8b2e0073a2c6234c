package jvm018

import (
	"github.com/perfdoctor/perfdoctor/evidence"
	"github.com/perfdoctor/perfdoctor/formats/jfr"
	"github.com/perfdoctor/perfdoctor/rules"
)

// oldCycleFrames are the tasks of a collection of the old generation, as a
// native profiler names the worker threads' entries: G1's concurrent
// marking cycle (root region scan, marking, the remembered sets' rebuild
// and scrub, clearing the bitmap for the next cycle) and the Parallel and
// Serial collectors' full collections. The heap's occupancy starts them
// (G1: the old generation over its initiating threshold, 45% of the heap
// by default and adaptive after; Parallel and Serial: the old generation
// full), not the allocation rate alone, so headroom over the live set is
// what makes them rare. ZGC's and Shenandoah's cycles are left out: every
// one of theirs marks the whole heap, whatever its age.
var oldCycleFrames = evidence.FuncPrefix(
	"G1CMConcurrentMarkingTask::", "G1CMRootRegionScanTask::", "G1RebuildRSAndScrubTask::",
	"G1ClearBitMapTask::", "G1ConcurrentMarkThread::", "G1CMRemarkTask::", "G1FullCollector::",
	"G1FullGCMarkTask::", "G1FullGCCompactTask::", "G1FullGCAdjustTask::", "G1FullGCPrepareTask::",
	"PSParallelCompact::", "SerialFullGC::", "GenMarkSweep::", "MarkSweep::",
)

// phases is the collector's share split by what starts its work.
type phases struct {
	// oldCycle is the old generation's collection (oldCycleFrames), or
	// with JFR alone G1's concurrent phases' estimated CPU.
	oldCycle float64
	// basis says which.
	basis string
}

// splitPhases splits share (the collector's share of the JVM's CPU) by
// what starts the work, from the profiler's frames when it sampled the
// collector's threads, else from JFR's concurrent phases (G1 only: ZGC's
// are its every cycle).
func splitPhases(cpu *evidence.Stacks, profiled bool, s *jfr.Summary, concurrentShare float64) phases {
	switch {
	case profiled:
		return phases{oldCycle: cpu.Share(oldCycleFrames), basis: "profiled tasks"}
	case s.GC.Old == "G1Old":
		return phases{oldCycle: concurrentShare, basis: "G1's concurrent phases, estimated"}
	}
	return phases{}
}

// facts are the split's evidence lines.
func (p phases) facts(share float64) []rules.Fact {
	if p.basis == "" {
		return nil
	}
	return []rules.Fact{
		rules.Share("old generation's collection cycles ("+p.basis+")", p.oldCycle),
		rules.Share("young collections and the rest", max(share-p.oldCycle, 0)),
	}
}

// oldCycleLed says whether the old generation's collection is most of the
// collector's share: the live set, not the allocation rate, then drives
// it.
func (p phases) oldCycleLed(share float64) bool {
	return share > 0 && p.oldCycle > share/2
}
