package goruntime

import "github.com/perfdoctor/perfdoctor/evidence"

// ScanFrames is the collector's heap-scanning work, matched by prefix
// across Go versions (scanobject before Go 1.26's span-based marking).
var ScanFrames = evidence.FuncPrefix(
	"runtime.scanobject", "runtime.scanObject", "runtime.scanSpan", "runtime.scanObjectsSmall",
	"runtime.scanObjectSmall", "runtime.spanSetScans", "runtime.tryDeferToSpanScan",
	"runtime.greyobject", "runtime.findObject", "runtime.markBits", "runtime.(*markBits)",
	"runtime.(*mspan).markBitsForIndex", "runtime.(*gcBits)", "runtime.(*spanInlineMarkBits)",
	"runtime.typePointers", "runtime.(*mspan).typePointersOf", "runtime.(*gcWork).tryGetSpan",
	"runtime.extractHeapBitsSmall", "runtime.(*mspan).heapBitsSmallForAddr", "runtime.spanOf",
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
}

// HeapScanBound measures the GC's cost and reports whether it is set by
// scanning a large live heap (gc-scan-heavy-heap, GC002) rather than by the
// allocation rate (gc-pressure, GC001). GC001 leaves such windows to GC002 so
// one GC cost is one finding. Both ask, so it is computed once per evidence.
func HeapScanBound(ev *evidence.Evidence) (ScanCost, bool) {
	r := ev.Memo(heapScanKey{}, func() any {
		c, bound := heapScanBound(ev)
		return scanResult{c, bound}
	}).(scanResult)
	return r.cost, r.bound
}

type heapScanKey struct{}

type scanResult struct {
	cost  ScanCost
	bound bool
}

func heapScanBound(ev *evidence.Evidence) (ScanCost, bool) {
	cpu := ev.CPUStacks()
	c := ScanCost{Scan: cpu.Share(ScanFrames), GC: cpu.Share(GCFrames)}
	inMalloc, inGC := cpu.Has(MallocFrames), cpu.Has(GCFrames)
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
	bound := c.Scan >= minScanShare &&
		c.Scan >= MinScanOfGC*c.GC &&
		c.Malloc < c.Scan && // otherwise allocation is the lever
		c.LiveObjects >= MinLiveObjects &&
		(c.CyclesPerSec == 0 || c.CyclesPerSec <= maxScanBoundCycles)
	return c, bound
}
