package jvm

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/prometheus/procfs"

	"github.com/perfdoctor/perfdoctor/bundle"
	"github.com/perfdoctor/perfdoctor/internal/progress"
)

// The first JFR recording a JVM starts makes it throw away its compiled
// code: JFR instruments JDK classes for its I/O and exception events by
// retransforming them (jdk.jfr.internal.instrument), and HotSpot's first
// class redefinition in a JVM deoptimizes every compiled method
// (CodeCache::mark_all_nmethods_for_evol_deoptimization, as long as
// JvmtiExport::all_dependencies_are_recorded is false). The service then
// runs interpreted and C1-compiled code while C2 compiles it all again,
// for tens of seconds under load on a small machine.
//
// Measured on corpus/jvm-apps/boot-items with
// jvm-springboot-log-caller-data's access log (JDK 17.0.15, 2 cores shared
// with perfdoctor's load at 32 connections, load average 8-12), a fresh JVM
// loaded 40 s until C2 was idle, then one thing started at second 40 and
// stopped at 55:
//
//	started at 40 s                    before      window 40-55 s            after
//	JFR.start settings=profile         16,779/s    3,732/s, 502 µs/request   C2 0.63 core 20 s later
//	JFR.start settings=default         15,575/s    3,857/s, 445 µs/request   C2 0.39 core
//	perfdoctor collect --jvm -d 15s    14,696/s    3,948/s, 468 µs/request   C2 0.46 core
//	async-profiler alone (its options) 13,681/s    16,640/s, 93 µs/request   C2 0.01 core
//	JFR.start, a recording having run   7,564/s    9,167/s, 108 µs/request   C2 0.00 core
//	 (and stopped) at 10-13 s
//
// against 87-100 µs/request before: the first start of any recording
// drops the rate to under 1,000/s in the next second and the JVM's CPU per
// request to 4-5x for the window, where a later start costs nothing and
// async-profiler costs nothing measurable. A JVM that perfdoctor has not
// recorded before is the usual case, so the collection starts the
// recording, waits for the JIT to settle (settle), and only then begins the
// window that the profiles, the /proc snapshots and the load's rate are
// read over. The same wait covers a JVM still warming up when the window
// would begin (the fresh JVM above compiled with C2 for 30 s under load
// before it went quiet, with or without a recording).

// DefaultSettle is the longest a collection waits for the JIT to settle
// before its window (Options.Settle): the recompilation above took 25-40 s
// under load on 2 cores.
const DefaultSettle = 90 * time.Second

// MaxSettle bounds Options.Settle: every caller (the CLI's --jit-settle,
// the MCP server's jit_settle_seconds) refuses more.
const MaxSettle = 10 * time.Minute

const (
	// settleQuiet is the JIT compiler threads' CPU, in cores, under which
	// the JVM counts as settled: a warm boot-items JVM's C1 and C2 threads
	// used 0.00-0.03 of a core a second, with a lone second at 0.11-0.14
	// now and then; recompiling, 0.1-0.7 (C2 alone 0.1-0.6 and C1 up to
	// 0.16 in the seconds after a deoptimization).
	settleQuiet = 0.05
	// settleSpan is how long, in seconds, the compiler threads' CPU is
	// averaged over: long enough for a lone busy second not to end or
	// prolong the wait.
	settleSpan = 3
)

// compilerThread says whether a thread's name (comm, 15 bytes at most) is a
// JIT compiler's: HotSpot's "C1 CompilerThread0" and "C2 CompilerThread0",
// or Graal's "JVMCI CompilerThread0" and "JVMCI-native CompilerThread0".
func compilerThread(comm string) bool {
	for _, p := range []string{"C1 CompilerThre", "C2 CompilerThre", "JVMCI CompilerT", "JVMCI-native Co"} {
		if strings.HasPrefix(comm, p) {
			return true
		}
	}
	return false
}

// compilerCPU is the CPU time the process's JIT compiler threads have used
// so far, from /proc/PID/task/*/stat. Threads that come and go (HotSpot
// adds and removes compiler threads with the queue) count while they exist.
func compilerCPU(procRoot string, pid int) (time.Duration, error) {
	pfs, err := procfs.NewFS(procRoot)
	if err != nil {
		return 0, err
	}
	threads, err := pfs.AllThreads(pid)
	if err != nil {
		return 0, err
	}
	var seconds float64
	for _, t := range threads {
		st, err := t.Stat()
		if err != nil {
			continue // the thread ended
		}
		if compilerThread(st.Comm) {
			seconds += st.CPUTime()
		}
	}
	return time.Duration(seconds * float64(time.Second)), nil
}

// settleItem is the manifest item saying how long the collection waited for
// the JIT before its window.
const settleItem = "jit-settle"

// settled reports whether the compiler threads' CPU over the last
// settleSpan seconds (cumulative readings a second apart, oldest first) is
// under settleQuiet cores, and that CPU.
func settled(readings []time.Duration) (bool, float64) {
	if len(readings) <= settleSpan {
		return false, 0
	}
	used := readings[len(readings)-1] - readings[len(readings)-1-settleSpan]
	cores := used.Seconds() / settleSpan
	return cores < settleQuiet, cores
}

// Settle is what a wait for a JVM's JIT to settle (WaitSettle) saw.
type Settle struct {
	Waited time.Duration
	// Settled is false when the bound came with the compiler still busy.
	Settled bool
	// Cores is the compiler threads' CPU, in cores, over the last
	// settleSpan seconds of the wait.
	Cores float64
}

// WaitSettle waits until process pid's JIT compiler threads have used under
// settleQuiet of a core over settleSpan seconds, or for max at most, and
// shows the wait on line. procRoot "" is /proc. A JVM whose code stays
// compiled waits settleSpan seconds. Interrupted through ctx, it returns the
// wait so far with ctx's error. It is the one settle test: the collection
// waits with it after starting its recording, verify before a JVM side's
// first measurement, the caller keeping the JVM under load meanwhile.
func WaitSettle(ctx context.Context, procRoot string, pid int, max time.Duration, line *progress.Line) (Settle, error) {
	if procRoot == "" {
		procRoot = "/proc"
	}
	t0 := time.Now()
	first, err := compilerCPU(procRoot, pid)
	if err != nil {
		return Settle{}, fmt.Errorf("reading the JIT compiler threads' CPU: %w", err)
	}
	readings := []time.Duration{first}
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	var s Settle
	for {
		line.Update("waiting for process %d's JIT compiler to settle: %s (at most %s)", pid, time.Since(t0).Round(time.Second), max)
		select {
		case <-ctx.Done():
			s.Waited = time.Since(t0)
			return s, ctx.Err()
		case <-tick.C:
		}
		cur, err := compilerCPU(procRoot, pid)
		s.Waited = time.Since(t0)
		if err != nil {
			return s, fmt.Errorf("reading the JIT compiler threads' CPU: %w", err)
		}
		readings = append(readings, cur)
		if s.Settled, s.Cores = settled(readings); s.Settled || s.Waited >= max {
			return s, nil
		}
	}
}

// settle waits, the recording running, for the JIT to settle (WaitSettle),
// for opt.Settle at most, and records how long as the jit-settle item.
func (c *collection) settle(ctx context.Context) {
	if c.opt.Settle <= 0 {
		return
	}
	s, err := WaitSettle(ctx, c.opt.Roots.Proc, c.opt.PID, c.opt.Settle, c.opt.Progress)
	switch {
	case ctx.Err() != nil:
		return
	case err != nil:
		c.w.Written(settleItem, "", s.Waited, err)
		return
	case s.Settled:
		c.w.Record(bundle.Item{Name: settleItem, Status: bundle.StatusOK, Duration: bundle.Duration(s.Waited)})
		c.opt.Logger.Info("JIT settled", "after", s.Waited.Round(time.Millisecond), "compiler_cores", s.Cores)
		return
	}
	it := bundle.Item{Name: settleItem, Status: bundle.StatusOK, Duration: bundle.Duration(s.Waited)}
	it.AddNote(fmt.Sprintf("the JIT compiler threads still used %.2f of a core when the window began after %s: the profiles hold recompilation and slower code", s.Cores, c.opt.Settle))
	c.w.Record(it)
	c.opt.Logger.Warn("JIT still compiling as the window begins", "waited", c.opt.Settle, "compiler_cores", s.Cores)
}
