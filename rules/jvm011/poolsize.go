// Package jvm011 detects a Java thread pool sized against its work and the
// CPUs the wrong way (finding class jvm-thread-pool-size): too few threads
// for blocking tasks, so tasks wait while CPUs idle, or hundreds of threads
// time-slicing CPU-bound tasks on a few CPUs.
package jvm011

import (
	"fmt"
	"time"

	"github.com/perfdoctor/perfdoctor/formats/jfr"
	"github.com/perfdoctor/perfdoctor/internal/human"
	"github.com/perfdoctor/perfdoctor/rules"
	"github.com/perfdoctor/perfdoctor/rules/jvmthreads"
)

// Rule is JVM011.
var Rule = &rules.Rule{
	ID:    "JVM011",
	Class: "jvm-thread-pool-size",
	Doc: rules.Doc{
		Title: "A thread pool is sized wrongly for its tasks and the CPUs",
		Text: `A pool whose tasks block (a remote call, a database query, a file read)
needs enough threads to keep the CPUs busy while some wait: with too few,
every thread is blocked, new tasks queue behind them and the CPUs idle, so
latency grows with the queue while the service looks unloaded. The opposite
mistake, hundreds of threads running CPU-bound tasks on a few CPUs, gains no
throughput: the threads time-slice, each task takes as many times longer as
there are threads per CPU, and the switching and the stacks cost CPU and
memory.`,
		Evidence: `Threads grouped into pools by name without their number ("pool-1-thread-3"
is pool "pool-1-thread"); a pool is an executor's when its threads run
ThreadPoolExecutor.runWorker or ForkJoinWorkerThread.run. For each such pool:
its threads' CPU (mean jdk.ThreadCPULoad, perfdoctor collect --jfr reads it
every second) and the time they spent blocked inside a task (jdk.ThreadSleep,
jdk.ThreadPark and jdk.JavaMonitorWait of 10 ms or more under the profile
settings, whose stacks run a task rather than wait in getTask for one).
Waits for a monitor or lock are left out of it: more threads would only
queue on the lock (JVM010). The pool's span is from its threads' first event to their last. Busy
share = 1 - the time its threads were parked waiting for a task (in getTask,
ForkJoinPool.awaitWork) / (threads × span). Too small: busy 90% or more
(high from 97%), blocked inside tasks at least half of the threads' time,
and the JVM under 80% of the CPUs. Too large: at least
16 threads per CPU (and 64 in all), runnable (neither blocked nor idle in
the recorded events) at least 75% of their time, holding at least half of
the JVM's CPU samples (the pool the CPU work runs on, not one whose short
waits go unrecorded), and together on at least half of the CPUs or with the
host's CPUs saturated in most readings. Pools of threads making fast
downstream calls read 45-60% runnable (their waits under 10 ms go
unrecorded: the sleepers fixture, casebook J2's audit pool); 400 threads
running CPU-bound tasks on 2 CPUs (the largepool fixture) 87%. Measured here: the rightpool fixture (24 threads for 16
concurrent 25 ms tasks) is 57% busy; casebook J3 fixed 13% (32 threads for
4 connections); E4 and E5 run CPU-bound pools of 4 threads, 74-85% busy and
never blocked; J3 bad (2 threads for 20 ms backend calls) 99% busy and
91-97% blocked, the smallpool fixture 100% and 80%.`,
		Fix: `Size a pool for blocking tasks from Little's law: threads = task rate ×
task time (blocked and running), or CPUs × (1 + wait time / compute time),
and bound the queue in front of it so overload is refused rather than
queued. For CPU-bound tasks use about as many threads as CPUs
(Runtime.availableProcessors(), which follows the container's CPU limit from
JDK 10 on), e.g. a ForkJoinPool or Executors.newFixedThreadPool(cpus). On
JDK 21 and later, run blocking tasks on virtual threads
(Executors.newVirtualThreadPerTaskExecutor()) and bound concurrency with a
Semaphore instead of a pool size.`,
		Before: `server.setExecutor(Executors.newFixedThreadPool(2));   // each request waits 25 ms on a backend`,
		After: `server.setExecutor(Executors.newFixedThreadPool(64));  // Little's law: 2,000 req/s × 25 ms = 50 threads busy
// JDK 21+: server.setExecutor(Executors.newVirtualThreadPerTaskExecutor());`,
		Caveats: caveat,
		Since:   "0.3",
		Refs: []string{
			"https://docs.oracle.com/en/java/javase/21/docs/api/java.base/java/util/concurrent/ThreadPoolExecutor.html",
			"https://openjdk.org/jeps/444",
		},
	},
	Needs: []rules.Input{rules.JVM},
	Check: check,
}

const caveat = "JFR records blocking of 10 ms or more under the profile settings, so shorter waits count as idle: the busy share is a lower bound. The queue in front of the pool is not recorded; a saturated pool is where tasks queue."

const (
	smallBusy       = 0.90
	smallBusyHigh   = 0.97
	blockedMajority = 0.5
	cpuBound        = 0.8 // JVM CPU share above which more threads cannot help
	largePerCPU     = 16
	largeMin        = 64
	// runnableMost of a large pool's thread time neither blocked nor idle
	// means most of its threads compete for the CPUs. Waits under 10 ms
	// are not recorded, so a pool of threads making fast downstream calls
	// reads 45-60% here (the sleepers fixture, casebook J2's audit pool):
	// the bar is above them.
	runnableMost = 0.75
	// cpuMajority of the JVM's CPU samples in one pool's threads makes it
	// the pool the CPU work runs on, not a pool of waiting threads whose
	// short waits go unrecorded.
	cpuMajority = 0.5
	busyMachine = 0.9
)

// machineBusy reports whether the host's CPUs were saturated (by the JVM
// or others) for most of the recording: a large runnable pool then
// time-slices even when its own share of the CPUs is small.
func machineBusy(s *jfr.Summary) bool {
	loads := s.Threading.CPULoad
	busy := 0
	for _, l := range loads {
		if l.Machine >= busyMachine {
			busy++
		}
	}
	return len(loads) > 0 && 2*busy >= len(loads)
}

func check(pass *rules.Pass) error {
	s := pass.Evidence.JVM
	span := s.Span()
	if span <= 0 {
		return nil
	}
	cpus := jvmthreads.CPUs(s, 1)
	for _, p := range s.Threading.Pools {
		if !p.Executor {
			continue
		}
		u := usage(p, span, cpus)
		u.ofJVM = float64(p.Samples) / float64(max(s.ExecutionSamples, 1))
		switch {
		case u.busy >= smallBusy && u.blocked >= blockedMajority && s.JVMCPU < cpuBound:
			pass.Report(tooSmall(pass, p, u, s.JVMCPU, cpus))
		case p.Threads >= max(largePerCPU*cpus, largeMin) && u.runnable >= runnableMost && u.ofJVM >= cpuMajority &&
			(u.cores >= 0.5*float64(cpus) || machineBusy(s)):
			pass.Report(tooLarge(pass, p, u, cpus))
		}
	}
	return nil
}

// use is a pool's activity: busy (not waiting for a task) and blocked (in
// a task) as shares of its threads' time, cores the CPUs its threads kept
// busy.
type use struct {
	busy, blocked, cores float64
	// runnable is the share of its threads' time neither blocked nor
	// idle in the recorded events: on a CPU or waiting for one.
	runnable float64
	// ofJVM is its threads' share of the JVM's CPU samples.
	ofJVM float64
}

// The pool's own window (first to last event of its threads) is the
// span, so a pool started after the recording began is not diluted.
func usage(p jfr.Pool, span time.Duration, cpus int) use {
	if p.Window > 0 && p.Window < span {
		span = p.Window
	}
	cores := p.CPU * float64(cpus)
	blocked := p.Blocked.Seconds() / span.Seconds()
	idle := p.Idle.Seconds() / span.Seconds()
	locked := p.Locked.Seconds() / span.Seconds()
	n := float64(p.Threads)
	return use{busy: max(1-idle/n, 0), blocked: min(blocked/n, 1), cores: cores,
		runnable: max(1-(blocked+locked+idle)/n, 0)}
}

func tooSmall(pass *rules.Pass, p jfr.Pool, u use, jvmCPU float64, cpus int) rules.Finding {
	sev := rules.Medium
	if u.busy >= smallBusyHigh {
		sev = rules.High
	}
	f := rules.Finding{
		Severity: sev,
		Impact:   u.blocked,
		Resource: "latency",
		ImpactBasis: "share of the pool's thread time spent blocked inside tasks while the pool was saturated: " +
			"more threads would wait in parallel instead of queueing tasks (the queue itself is not recorded)",
		Summary: fmt.Sprintf("Thread pool %s has %d threads, never idle for a task (busy %s) and blocked inside tasks %s of the time, while the JVM used %s of the CPUs: tasks queue for a thread",
			p.Name, p.Threads, human.Percent(u.busy), human.Percent(u.blocked), human.Percent(jvmCPU)),
		Evidence: []rules.Fact{
			rules.Count("threads in the pool", float64(p.Threads), ""),
			rules.Share("busy share of the pool's threads", u.busy),
			rules.Share("blocked inside tasks", u.blocked),
			rules.Count("CPUs the pool kept busy", u.cores, ""),
			rules.Share("JVM CPU (jdk.CPULoad)", jvmCPU),
			rules.Count("CPUs", float64(cpus), ""),
		},
		Fix:     pass.Rule.Doc.Fix,
		Example: pass.Rule.Doc.Before + "\n->\n" + pass.Rule.Doc.After,
		Caveats: []string{caveat},
	}
	var waits []jfr.WaitSite
	var total time.Duration
	for _, w := range pass.Evidence.JVM.Threading.TaskWaits {
		if w.Class == p.Name {
			waits = append(waits, w)
			total += w.Total
		}
	}
	f.Locations = jvmthreads.Locations(waits, total, 3, func(jfr.WaitSite) string { return "where the pool's threads wait" })
	if len(f.Locations) > 0 {
		f.Summary += "; they wait in " + jvmthreads.SiteName(waits[0].Stack)
	}
	return f
}

func tooLarge(pass *rules.Pass, p jfr.Pool, u use, cpus int) rules.Finding {
	perCPU := float64(p.Threads) / float64(cpus)
	f := rules.Finding{
		Severity: rules.Medium,
		// Each task's run stretches by the threads per CPU; throughput
		// does not change, so the estimate is the switching overhead only.
		Impact:      0.05,
		Resource:    "latency",
		ImpactBasis: "not measurable from JFR: each CPU-bound task time-slices with the others and finishes threads-per-CPU times later; the switching and the stacks cost a few percent",
		Summary: fmt.Sprintf("Thread pool %s runs %d threads on %d CPUs (%.0f per CPU), runnable %s of the time: tasks time-slice instead of finishing one after another",
			p.Name, p.Threads, cpus, perCPU, human.Percent(u.runnable)),
		Evidence: []rules.Fact{
			rules.Count("threads in the pool", float64(p.Threads), ""),
			rules.Count("threads per CPU", perCPU, ""),
			rules.Count("CPUs the pool kept busy", u.cores, ""),
			rules.Share("runnable (neither blocked nor idle in the recorded events)", u.runnable),
			rules.Share("the pool's share of the JVM's CPU samples", u.ofJVM),
			rules.Share("blocked inside tasks", u.blocked),
		},
		Fix:     pass.Rule.Doc.Fix,
		Caveats: []string{caveat},
	}
	if t := pass.Evidence.JVM.Threading; t.LiveMax > 0 {
		f.Evidence = append(f.Evidence, rules.Count("live threads, highest (jdk.JavaThreadStatistics)", float64(t.LiveMax), ""),
			rules.Count("threads started in the recording (jdk.ThreadStart)", float64(t.Started), ""))
	}
	return f
}
