package frames

// The Go runtime's frame families: what its functions mean, so that the
// rules judging the collector, the allocator and the scheduler, and the
// facts measuring them, agree on what a frame is.

import "github.com/perfdoctor/perfdoctor/evidence"

// GCFrames is the family of runtime functions that do collector work. It is
// matched by prefix and spans Go versions: Go 1.26 marks through scanObject
// and scanSpan where older releases show scanobject.
var GCFrames = evidence.FuncPrefix(
	"runtime.gcBgMarkWorker", "runtime.gcAssistAlloc", "runtime.gcDrain",
	"runtime.bgsweep", "runtime.sweepone", "runtime.(*sweepLocked).sweep",
	"runtime.deductSweepCredit", "runtime.(*mheap).reclaim",
	"runtime.gcStart", "runtime.gcMarkDone", "runtime.gcMarkTermination",
	"runtime.markroot", "runtime.scanobject", "runtime.scanObject", "runtime.scanSpan",
	"runtime.tryDeferToSpanScan", "runtime.scanstack", "runtime.greyobject",
	"runtime.gcmarknewobject", "runtime.wbBufFlush", "runtime.gcFlushBgCredit",
	"runtime.GC",
)

// WriteBarrierFrames is the mutator's side of marking: the write barrier
// the compiler puts before each pointer store and the bulk barriers of
// typed copies (gcWriteBarrier, Go 1.21's gcWriteBarrier1 to 8,
// bulkBarrierPreWrite), which record pointers for the collector. The
// runtime turns the barrier on only while the collector marks, so its cost
// follows the time spent marking; its buffer's flush (wbBufFlush) is
// collector work and in GCFrames.
var WriteBarrierFrames = evidence.FuncPrefix(
	"runtime.gcWriteBarrier", "runtime.bulkBarrierPreWrite", "runtime.bulkBarrierBitmap",
	"runtime.typeBitsBulkBarrier", "runtime.(*wbBuf).", "runtime.wbZero", "runtime.wbMove",
	"gcWriteBarrier", // the shared body gcWriteBarrier1 to 8 jump to: no package in its symbol
)

// MallocFrames is the allocator's entry.
var MallocFrames = evidence.FuncPrefix("runtime.mallocgc")

// SchedulerFrames is the scheduler's work-finding family.
var SchedulerFrames = evidence.FuncPrefix(
	"runtime.schedule", "runtime.findRunnable", "runtime.findrunnable",
	"runtime.stealWork", "runtime.runqgrab", "runtime.wakep",
	"runtime.startm", "runtime.stopm",
)

// ChurnFrames is the runtime's goroutine creation and exit. runtime.goexit
// itself (the root of every stack) is not one of them.
var ChurnFrames = evidence.FuncPrefix(
	"runtime.newproc", "runtime.goexit0", "runtime.goexit1", "runtime.gdestroy",
	"runtime.gfget", "runtime.gfput", "runtime.malg",
)

// SyscallFrames are where a Go CPU profile charges the time a thread
// spends in the kernel: the system call entry points (the profiling signal
// counts kernel time to the user frame that made the call).
var SyscallFrames = evidence.FuncPrefix(
	"syscall.Syscall", "syscall.RawSyscall", "syscall.syscall", "syscall.rawsyscall",
	"internal/runtime/syscall.Syscall", "runtime/internal/syscall.Syscall",
	"golang.org/x/sys/unix.Syscall", "golang.org/x/sys/unix.RawSyscall",
	"runtime.write1", "runtime.read", "runtime.futex", "runtime.usleep", "runtime.netpoll",
)

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

// JVMGCFrames are a JVM collector's own functions as native profilers name them
// (HotSpot's C++ symbols), seen on the GC threads' stacks.
var JVMGCFrames = evidence.FuncPrefix(
	"G1", "GCTaskThread::", "ConcurrentGCThread::", "CollectedHeap::", "GenCollectedHeap::",
	"ZMark", "ZRelocate", "ZHeap", "ZDriver", "ZWorker", "ZCollect", "ZPage", "ZBarrier", "ZGeneration", "ZThread",
	"PSPromotionManager", "PSScavenge", "PSParallelCompact", "ParallelScavengeHeap", "PSOldGen", "PSYoungGen",
	"DefNewGeneration", "SerialHeap", "TenuredGeneration", "MarkSweep", "GenMarkSweep", "SerialFullGC", "Shenandoah",
)

// JITFrames is a JVM's just-in-time compilers at work, as native profilers
// name HotSpot's compiler threads (async-profiler's, perf's): C2 and C1
// under CompileBroker's thread loop. Their CPU follows the code that gets
// hot, not the requests: it falls as the JVM warms up.
var JITFrames = evidence.FuncPrefix("CompileBroker::", "C2Compiler::", "Compiler::compile_method")
