// Package jvm011 detects a Java thread pool sized against its work and the
// CPUs the wrong way (finding class jvm-thread-pool-size): too few threads
// for blocking tasks, so tasks wait while CPUs idle (any executor: known by
// how its threads wait, Netty's event loops blocked in a handler among
// them), or hundreds of threads time-slicing CPU-bound tasks on a few CPUs.
package jvm011

import (
	"fmt"
	"strings"
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
is pool "pool-1-thread", "qtp731260860-17" is "qtp731260860"), any
implementation: a pool is known by how its threads wait, not by its class.
For each pool: its threads' CPU (mean jdk.ThreadCPULoad, perfdoctor collect
--jfr reads it every second) and their waits of 10 ms or more under the
profile settings (jdk.ThreadSleep, jdk.ThreadPark, jdk.JavaMonitorWait,
jdk.SocketRead), each filed as waiting for work (an executor's getTask,
ForkJoinPool.awaitWork, Tomcat's getTask, Jetty's idleJobPoll, Netty's
takeTask, or a queue's take or poll or a monitor's wait called right from
the thread's own loop, as a hand-made pool waits), for a monitor or lock
(left out: more threads would only queue on the lock, JVM010), or blocked
inside the work (a downstream: a socket read, a sleep, a park for a reply).
The pool's span is from its threads' first event to their last. Busy share
= 1 - the time waiting for work / (threads × span). Too small: busy 90% or
more (high from 97%), fewer than half a thread waiting for work on average
(a request queued while a thread waits is taken at once), blocked inside
the work at least half of the threads' time, and the JVM under 80% of the
CPUs. A group that is neither an executor's (ThreadPoolExecutor.runWorker,
ForkJoinWorkerThread.run) nor an event loop (Netty's ...EventLoop.run) must
also run at least 10% of the JVM's execution samples (where the work runs)
and wait mostly on something else than its own threads (a barrier, a
latch: JVM012); a group waiting mostly on an executor's futures
(FutureTask.get) beside another saturated pool is that pool's symptom.
Measured on HTTP servers written for the rule (testdata/servers, 32
connections, a downstream process answering in 20 ms): Jetty's
QueuedThreadPool of 6 (5 threads seen) 100% busy, 0.00 threads idle, 73%
blocked, 96% of the samples, 139 requests/s; Netty's 2 event loops blocked
in channelRead 93% (their idle waits are in epoll, which JFR does not
record), 87/s; a ThreadPoolExecutor of 2 behind the JDK's HttpServer 92%
blocked, 82/s; a hand-made pool of 2 threads taking from a
LinkedBlockingQueue 92% blocked (parked for java.net.http's reply), 60% of
the samples, 72/s. With threads enough: Jetty's default (it grows to 37
threads) 91% busy but 3.3 threads idle on average, 1,171/s; fixed pools of
64 (an executor, the hand-made pool, Netty handing the call to a pool)
44-47% busy, 1,000, 906 and 1,220/s; a pool of 2 threads hashing on the
CPUs 99% busy and never blocked (the CPUs' finding, not this one). Too
large: at least
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
91-97% blocked, the smallpool fixture 100% and 80% (its 16 callers, parked
on the pool's futures, 93% blocked with 24% of the samples, are its
symptom). A pool POOL001 already names from the load's latencies (with
the setting that sizes it and the next bound behind it) is left to that
finding.`,
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
	// After the others: a pool POOL001 already named from the load's
	// queueing (with its setting and the next bound behind it) is left to
	// that finding.
	Fallback: true,
	Check:    check,
}

const caveat = "JFR records blocking of 10 ms or more under the profile settings, so shorter waits count as idle: the busy share is a lower bound. The queue in front of the pool is not recorded; a saturated pool is where tasks queue."

const (
	smallBusy = 0.90
	// maxIdleThreads is the mean number of a pool's threads waiting for
	// work below which none is spare: a request queued while a thread
	// waits is taken at once, so a queue needs all of them busy. Pools
	// with too few threads read 0.00 (the servers fixtures: Jetty, a
	// ThreadPoolExecutor, a hand-made pool; Netty's event loops wait in
	// epoll, which JFR does not record); Jetty growing its pool to the
	// 32 connections it serves (37 threads) 3.3, fixed pools of 64 for
	// 32 connections 34-36.
	maxIdleThreads = 0.5
	// minWorkShare is the share of the JVM's execution samples (or of its
	// CPU, when async-profiler took the samples) a group of threads known
	// only by its name and its waits (not an executor's workers, not an
	// event loop) must run to be where the work runs, not a housekeeping
	// group: the saturated pools of the servers fixtures run 60-96% of the
	// samples, Spring Boot's Jetty pool in the corpus 31% of the CPU.
	minWorkShare    = 0.10
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
	sampled := false // the recording's execution samples name threads (not with async-profiler's)
	for _, p := range s.Threading.Pools {
		sampled = sampled || p.Samples > 0
	}
	for _, p := range s.Threading.Pools {
		u := usage(p, span, cpus)
		u.ofJVM = float64(p.Samples) / float64(max(s.ExecutionSamples, 1))
		w := poolWaits(s.Threading.TaskWaits, p.Name)
		switch {
		case u.busy >= smallBusy && u.idleThreads < maxIdleThreads && u.blocked >= blockedMajority && s.JVMCPU < cpuBound &&
			(p.Executor || p.EventLoop || runsWork(p, u, s, sampled) && !w.coordinated() && !w.onFutures()):
			if !queueingNamed(pass.Earlier, p.Name) {
				pass.Report(tooSmall(pass, p, u, w, s.JVMCPU, cpus))
			}
		case p.Executor && p.Threads >= max(largePerCPU*cpus, largeMin) && u.runnable >= runnableMost && u.ofJVM >= cpuMajority &&
			(u.cores >= 0.5*float64(cpus) || machineBusy(s)):
			pass.Report(tooLarge(pass, p, u, cpus))
		}
	}
	return nil
}

// queueingNamed reports whether a pool-queueing finding (POOL001, from the
// load's latencies by Little's law) already names the pool.
func queueingNamed(earlier []rules.Finding, pool string) bool {
	for _, f := range earlier {
		if f.Class == "pool-queueing" && strings.Contains(f.Summary, "("+pool+")") {
			return true
		}
	}
	return false
}

// runsWork reports whether a group of threads known only by its name runs
// a share of the JVM's work: of its execution samples, else (async-profiler
// took the CPU samples) of its CPU by jdk.ThreadCPULoad.
func runsWork(p jfr.Pool, u use, s *jfr.Summary, sampled bool) bool {
	if sampled {
		return u.ofJVM >= minWorkShare
	}
	return s.JVMCPU > 0 && p.CPU/s.JVMCPU >= minWorkShare
}

// waits are a pool's recorded waits inside its work, by site.
type waits struct {
	sites []jfr.WaitSite
	total time.Duration
	// coordination is the time waiting for the pool's own other threads
	// (a barrier, a latch, a phaser, an exchanger), futures the time
	// parked on an executor's task of this JVM (FutureTask.get,
	// ForkJoinTask.join).
	coordination, futures time.Duration
}

// Frames of waits for other threads of the JVM, not for a downstream.
var (
	coordinationFrames = []string{
		"java.util.concurrent.CyclicBarrier.", "java.util.concurrent.CountDownLatch.",
		"java.util.concurrent.Phaser.", "java.util.concurrent.Exchanger.",
	}
	futureFrames = []string{"java.util.concurrent.FutureTask.get", "java.util.concurrent.ForkJoinTask.join", "java.util.concurrent.ForkJoinTask.get"}
)

func poolWaits(all []jfr.WaitSite, pool string) waits {
	var w waits
	for _, site := range all {
		if site.Class != pool {
			continue
		}
		w.sites = append(w.sites, site)
		w.total += site.Total
		if stackHasPrefix(site.Stack, coordinationFrames) {
			w.coordination += site.Total
		}
		if stackHasPrefix(site.Stack, futureFrames) {
			w.futures += site.Total
		}
	}
	return w
}

// coordinated reports whether most of the waits are for the group's other
// threads (JVM012 reads those): no downstream holds them.
func (w waits) coordinated() bool { return w.total > 0 && 2*w.coordination >= w.total }

// onFutures reports whether most of the waits are for tasks run by an
// executor of this JVM.
func (w waits) onFutures() bool { return w.total > 0 && 2*w.futures >= w.total }

func stackHasPrefix(stack []jfr.StackFrame, prefixes []string) bool {
	for _, f := range stack {
		for _, p := range prefixes {
			if strings.HasPrefix(f.Func, p) {
				return true
			}
		}
	}
	return false
}

// use is a pool's activity: busy (not waiting for a task) and blocked (in
// a task) as shares of its threads' time, cores the CPUs its threads kept
// busy.
type use struct {
	busy, blocked, cores float64
	// idleThreads is how many of its threads waited for work, on average.
	idleThreads float64
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
	return use{busy: max(1-idle/n, 0), blocked: min(blocked/n, 1), cores: cores, idleThreads: idle,
		runnable: max(1-(blocked+locked+idle)/n, 0)}
}

func tooSmall(pass *rules.Pass, p jfr.Pool, u use, w waits, jvmCPU float64, cpus int) rules.Finding {
	sev := rules.Medium
	if u.busy >= smallBusyHigh {
		sev = rules.High
	}
	what, resize, _ := jvmthreads.PoolKind(p.Name)
	f := rules.Finding{
		Severity: sev,
		Impact:   u.blocked,
		Resource: "latency",
		ImpactBasis: "share of the pool's thread time spent blocked inside tasks while the pool was saturated: " +
			"more threads would wait in parallel instead of queueing tasks (the queue itself is not recorded)",
		Summary: fmt.Sprintf("Thread pool %s (%s) has %d threads, never idle for a task (busy %s) and blocked inside tasks %s of the time, while the JVM used %s of the CPUs: tasks queue for a thread",
			p.Name, what, p.Threads, human.Percent(u.busy), human.Percent(u.blocked), human.Percent(jvmCPU)),
		Evidence: []rules.Fact{
			rules.Count("threads in the pool", float64(p.Threads), ""),
			rules.Share("busy share of the pool's threads", u.busy),
			rules.Share("blocked inside tasks", u.blocked),
			rules.Count("threads waiting for work, on average", u.idleThreads, ""),
			rules.Count("CPUs the pool kept busy", u.cores, ""),
			rules.Share("JVM CPU (jdk.CPULoad)", jvmCPU),
			rules.Count("CPUs", float64(cpus), ""),
		},
		Fix:     pass.Rule.Doc.Fix,
		Example: pass.Rule.Doc.Before + "\n->\n" + pass.Rule.Doc.After,
		Caveats: []string{caveat},
	}
	if resize != "" {
		f.Fix = fmt.Sprintf("Raise %s from the %d threads seen to the requests in flight (Little's law: requests per second × the time each holds a thread). %s", resize, p.Threads, f.Fix)
	}
	if p.EventLoop {
		f.Summary = fmt.Sprintf("Event loop %s (%s) has %d threads blocked inside handlers %s of the time, while the JVM used %s of the CPUs: every connection of a blocked loop waits",
			p.Name, what, p.Threads, human.Percent(u.blocked), human.Percent(jvmCPU))
		f.Fix = eventLoopFix
		f.Example = eventLoopBefore + "\n->\n" + eventLoopAfter
	}
	f.Locations = jvmthreads.Locations(w.sites, w.total, 3, func(jfr.WaitSite) string { return "where the pool's threads wait" })
	if len(f.Locations) > 0 {
		f.Summary += "; they wait in " + jvmthreads.SiteName(w.sites[0].Stack)
	}
	return f
}

// An event loop serves many connections on one thread: a blocking call in
// a handler stalls all of them, and more loop threads only spread it.
const (
	eventLoopFix = `Never block the event loop: make the downstream call asynchronous (a non-blocking client whose
callback writes the reply), or hand the blocking call to an executor of its own sized to the requests
in flight (Netty: pipeline.addLast(executorGroup, handler), or submit it to a pool and write the
reply from there). More event loop threads only spread the stall over more connections.`
	eventLoopBefore = `public void channelRead(ChannelHandlerContext ctx, Object msg) {
    ctx.writeAndFlush(reply(backend.call(msg)));              // blocks the event loop ~20 ms
}`
	eventLoopAfter = `public void channelRead(ChannelHandlerContext ctx, Object msg) {
    blocking.execute(() -> ctx.writeAndFlush(reply(backend.call(msg))));  // a pool sized to the requests in flight
}`
)

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
