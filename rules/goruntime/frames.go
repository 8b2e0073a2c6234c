// Package goruntime is what the Go runtime's frames mean and what its costs
// are, shared by the rules that judge them: the collector's, the
// allocator's, the scheduler's and goroutine lifecycle's frame families, the
// system call entries, how GC CPU splits between allocation rate and heap
// scanning, and the GOGC/GOMEMLIMIT headroom advice. One room, so that GC001,
// GC002, GC003, SCHED001 and SCHED002 agree on what a frame is.
package goruntime

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

// CoresUsed is the CPU the process used over the CPU profile, in cores.
func CoresUsed(ev *evidence.Evidence) float64 {
	p := ev.Profile(evidence.CPU)
	if p == nil || p.DurationNanos <= 0 {
		return 0
	}
	st := evidence.NewStacks(p, "cpu")
	if st == nil || st.Unit != "nanoseconds" {
		return 0
	}
	return float64(st.Total) / float64(p.DurationNanos)
}
