package facts

import (
	"github.com/perfdoctor/perfdoctor/evidence"
	"github.com/perfdoctor/perfdoctor/facts/frames"
)

// When the GC's CPU counts as set by the live heap's scan rather than by the
// allocation rate. GC CPU is cycles/s × cost per cycle: GC001's levers
// (fewer allocations, more headroom) cut the first, GC002's (a pointer-free
// layout) the second. The split is by which factor is out of line: millions
// of live objects scanned by a few cycles a second is GC002; many cycles a
// second is GC001 even over a large heap, since headroom is the cheap fix
// there (case D1: ~22 cycles/s over ~850k objects; case B5: 2 cycles/s over
// 2.6M objects).
const (
	minScanShare       = 0.05
	MinScanOfGC        = 0.5
	MinLiveObjects     = 1_000_000
	maxScanBoundCycles = 5 // GC cycles per second
)

// ScanCost is what the GC's CPU is spent on over the window.
type ScanCost struct {
	Scan, GC, Malloc float64 // shares of CPU samples; Malloc is outside GC
	LiveObjects      int64   // in-use objects in the end heap profile
	LiveBytes        int64
	CyclesPerSec     float64 // 0 when unknown
	// HeapScanBound: scanning a large live heap sets the GC's cost, not
	// the allocation rate.
	HeapScanBound bool
}

// GCCost measures the GC's cost and says whether it is set by scanning a
// large live heap (gc-scan-heavy-heap, GC002) rather than by the
// allocation rate (gc-pressure, GC001). GC001 leaves such windows to GC002
// so one GC cost is one finding.
var GCCost = &Fact[ScanCost]{
	Name:     "gc-cost",
	Doc:      "How the collector's CPU splits: heap scanning, all GC work and the allocator (shares of CPU samples), the live heap, cycles per second, and whether scanning a large live heap sets the cost rather than the allocation rate.",
	Requires: []Key{CPUStacks},
	Compute:  func(p *Pass) ScanCost { return gcCost(p.Evidence, Get(p, CPUStacks)) },
}

func gcCost(ev *evidence.Evidence, cpu *evidence.Stacks) ScanCost {
	c := ScanCost{Scan: cpu.Share(frames.ScanFrames), GC: cpu.Share(frames.GCFrames)}
	inMalloc, inGC := cpu.Has(frames.MallocFrames), cpu.Has(frames.GCFrames)
	c.Malloc = cpu.ShareWhere(func(s evidence.Sample) bool { return inMalloc(s) && !inGC(s) })
	if objs := evidence.NewStacks(ev.Profile(evidence.Heap), "inuse_objects"); objs != nil {
		c.LiveObjects = objs.Total
	}
	if bytes := evidence.NewStacks(ev.Profile(evidence.Heap), "inuse_space"); bytes != nil {
		c.LiveBytes = bytes.Total
	}
	if gc, ok := ev.GC(); ok {
		c.CyclesPerSec = gc.CyclesPerSec
	} else if t := ev.GCTrace; t != nil {
		c.CyclesPerSec = t.CyclesPerSec
	}
	c.HeapScanBound = c.Scan >= minScanShare &&
		c.Scan >= MinScanOfGC*c.GC &&
		c.Malloc < c.Scan && // otherwise allocation is the lever
		c.LiveObjects >= MinLiveObjects &&
		(c.CyclesPerSec == 0 || c.CyclesPerSec <= maxScanBoundCycles)
	return c
}
