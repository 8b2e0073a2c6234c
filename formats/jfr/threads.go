package jfr

import (
	"maps"
	"slices"
	"sort"
	"strings"
	"time"
)

// threadEvents are the events about threads, locks and CPU load that the
// JVM thread rules read (pinning, contention, pool sizing, balance,
// context switches, CPU saturation).
var threadEvents = []string{
	"jdk.VirtualThreadPinned", "jdk.ThreadPark", "jdk.ThreadSleep", "jdk.SocketRead",
	"jdk.JavaThreadStatistics", "jdk.ThreadStart", "jdk.ThreadContextSwitchRate",
}

func init() { Events = append(Events, threadEvents...) }

// Threading is what a recording says about the JVM's threads beyond their
// CPU load: where they waited for locks or were pinned, how they group
// into pools, how many there were, and how the CPU load moved.
type Threading struct {
	// Pinned is jdk.VirtualThreadPinned (JDK 21 and later, parks of at
	// least 20 ms under the profile settings) by site, longest total first.
	Pinned []WaitSite `json:"pinned,omitempty"`
	// LockWaits is contended monitor entries (jdk.JavaMonitorEnter) and
	// parks acquiring a java.util.concurrent lock (jdk.ThreadPark on a
	// ReentrantLock, ReentrantReadWriteLock or StampedLock), both of at
	// least 10 ms under the profile settings, by lock class and site.
	LockWaits []WaitSite `json:"lock_waits,omitempty"`
	// TaskWaits is where the threads of a pool (threads named alike)
	// blocked inside their work (sleeping, parked, waiting on a condition,
	// reading a socket: not for a lock, not for work), by pool (Class is
	// the pool's name) and site.
	TaskWaits []WaitSite `json:"task_waits,omitempty"`
	// Pools are threads grouped by name without its number
	// ("pool-1-thread-3" is pool "pool-1-thread"): groups of two or more,
	// and executor workers on their own.
	Pools []Pool `json:"pools,omitempty"`

	// LiveMax is the most live threads (jdk.JavaThreadStatistics).
	LiveMax int64 `json:"live_max,omitempty"`
	// Started counts jdk.ThreadStart events: threads started in the span.
	Started int `json:"started,omitempty"`

	// ContextSwitchRate is jdk.ThreadContextSwitchRate, the host's context
	// switches per second (all processes), mean and highest.
	ContextSwitchRate    float64 `json:"context_switch_rate,omitempty"`
	ContextSwitchRateMax float64 `json:"context_switch_rate_max,omitempty"`
	ContextSwitchSamples int     `json:"context_switch_samples,omitempty"`

	// CPULoad is every jdk.CPULoad reading in time order (one a second
	// under both settings), at most maxCPULoads.
	CPULoad []CPULoad `json:"cpu_load,omitempty"`
}

// WaitSite is time threads spent blocked at one place, for one reason.
type WaitSite struct {
	// Class is the lock's class (monitor or parked-on object).
	Class string `json:"class,omitempty"`
	// Kind is "monitor" or "lock" for lock waits; for pinning, the
	// blocking operation ("LockSupport.park", JDK 24 and later).
	Kind string `json:"kind,omitempty"`
	// Reason is why a virtual thread was pinned (JDK 24 and later: "Native
	// or VM frame on stack", "Holding monitor(s)"...).
	Reason string `json:"reason,omitempty"`
	// Stack is the waiting thread's stack, innermost first, at most
	// maxSiteFrames frames.
	Stack []StackFrame `json:"stack"`
	Count int          `json:"count"`
	// Threads counts the distinct threads that waited here.
	Threads int           `json:"threads"`
	Total   time.Duration `json:"total_ns"`
	Max     time.Duration `json:"max_ns"`
}

// StackFrame is one Java frame: "pkg.Class.method", its guessed source
// file and its line.
type StackFrame struct {
	Func string `json:"func"`
	File string `json:"file,omitempty"`
	Line int64  `json:"line,omitempty"`
}

// Pool is a group of threads named alike.
type Pool struct {
	Name    string `json:"name"`
	Threads int    `json:"threads"`
	// Executor says its threads ran java.util.concurrent executor work
	// (ThreadPoolExecutor.runWorker, ForkJoinWorkerThread.run).
	Executor bool `json:"executor,omitempty"`
	// EventLoop says its threads blocked inside an event loop's run (Netty's
	// NioEventLoop.run, EpollEventLoop.run...): work on a loop that serves
	// many connections, each waiting while it blocks.
	EventLoop bool `json:"event_loop,omitempty"`
	// CPU is the threads' mean jdk.ThreadCPULoad summed, as a fraction of
	// all CPUs; Busiest is the thread with the most, BusiestCPU its load.
	CPU        float64 `json:"cpu"`
	Busiest    string  `json:"busiest,omitempty"`
	BusiestCPU float64 `json:"busiest_cpu,omitempty"`
	// Samples counts the execution samples of the pool's threads,
	// BusiestSampled names its thread with the most and BusiestSamples
	// counts them.
	Samples        int    `json:"samples,omitempty"`
	BusiestSampled string `json:"busiest_sampled,omitempty"`
	BusiestSamples int    `json:"busiest_samples,omitempty"`
	// Blocked is the time its threads spent blocked inside a task
	// (sleeping, waiting for a condition or a socket read: the recorded
	// events of 10 ms or more), Locked the time they waited for a monitor
	// or lock inside a task, Idle the time parked waiting for a task (in
	// an executor's getTask, a pool's own idle poll, or a queue's take or
	// a monitor's wait called right from the thread's loop). Any group's
	// threads, executor or not: a pool is known by how its threads wait.
	Blocked time.Duration `json:"blocked_ns"`
	Locked  time.Duration `json:"locked_ns"`
	Idle    time.Duration `json:"idle_ns"`
	// Window is from the first event of one of its threads to the last
	// (samples and waits): how long the pool was seen at work.
	Window time.Duration `json:"window_ns,omitempty"`
}

// CPULoad is one jdk.CPULoad reading, fractions of all CPUs.
type CPULoad struct {
	Time      time.Time `json:"t"`
	JVMUser   float64   `json:"jvm_user"`
	JVMSystem float64   `json:"jvm_system"`
	Machine   float64   `json:"machine"`
}

const (
	maxSiteFrames = 32
	maxSites      = 16
	maxSiteKeys   = 10_000
	maxCPULoads   = 3600
	maxPools      = 64
)

// lockClasses are the java.util.concurrent lock implementations whose
// parks are lock acquisitions, not waits for a signal or for work.
var lockClasses = []string{
	"java.util.concurrent.locks.ReentrantLock$",
	"java.util.concurrent.locks.ReentrantReadWriteLock$",
	"java.util.concurrent.locks.StampedLock",
}

func isLockClass(c string) bool {
	for _, p := range lockClasses {
		if strings.HasPrefix(c, p) {
			return true
		}
	}
	return false
}

// Frames that tell a pool worker's wait for work from a wait inside a task.
var (
	taskWaitFrames = []string{
		"java.util.concurrent.ThreadPoolExecutor.getTask",
		"java.util.concurrent.ForkJoinPool.awaitWork",
		"java.util.concurrent.ForkJoinPool.runWorker", // parked between tasks when no frame of a task is above
		// Pools of servers and libraries, waiting for their next job.
		"org.apache.tomcat.util.threads.ThreadPoolExecutor.getTask",
		"org.eclipse.jetty.util.thread.QueuedThreadPool$Runner.idleJobPoll",
		"org.eclipse.jetty.util.thread.ReservedThreadExecutor$ReservedThread.reservedWait",
		"io.netty.util.concurrent.SingleThreadEventExecutor.takeTask",
	}
	workerFrames = []string{
		"java.util.concurrent.ThreadPoolExecutor.runWorker",
		"java.util.concurrent.ForkJoinWorkerThread.run",
	}
)

// threadAgg accumulates the thread events.
type threadAgg struct {
	pinned, locks, tasks siteAgg
	perThread            map[string]*threadWait
	samples              map[string]int
	cpuTimeSamples       map[string]int           // jdk.CPUTimeSample's, which replace samples when present
	seen                 map[string]*[2]time.Time // each thread's first and last event
	liveMax              int64
	started              int
	csSum, csMax         float64
	csN                  int
	cpu                  []CPULoad
}

type threadWait struct {
	blocked, locked, idle time.Duration
	executor, eventLoop   bool
}

type siteAgg map[string]*siteAcc

type siteAcc struct {
	WaitSite
	threads map[string]bool
}

func newThreadAgg() *threadAgg {
	return &threadAgg{pinned: siteAgg{}, locks: siteAgg{}, tasks: siteAgg{}, perThread: map[string]*threadWait{}, samples: map[string]int{}, cpuTimeSamples: map[string]int{}, seen: map[string]*[2]time.Time{}}
}

func (a siteAgg) add(st *stackTrace, class, kind, reason, thread string, d time.Duration) {
	frames := siteFrames(st)
	var key strings.Builder
	key.WriteString(class + "\x00" + kind + "\x00" + reason)
	for _, f := range frames {
		key.WriteString("\x00" + f.Func)
	}
	s := a[key.String()]
	if s == nil {
		if len(a) >= maxSiteKeys {
			return
		}
		s = &siteAcc{WaitSite: WaitSite{Class: class, Kind: kind, Reason: reason, Stack: frames}, threads: map[string]bool{}}
		a[key.String()] = s
	}
	s.Count++
	s.Total += d
	s.Max = max(s.Max, d)
	if len(s.threads) < 1000 {
		s.threads[thread] = true
	}
}

func siteFrames(st *stackTrace) []StackFrame {
	if st == nil {
		return nil
	}
	out := make([]StackFrame, 0, min(len(st.Frames), maxSiteFrames))
	for i := range st.Frames[:min(len(st.Frames), maxSiteFrames)] {
		name := frameName(&st.Frames[i])
		out = append(out, StackFrame{Func: name, File: sourceFile(name), Line: max(st.Frames[i].LineNumber, 0)})
	}
	return out
}

func (a siteAgg) finish() []WaitSite {
	out := make([]WaitSite, 0, len(a))
	for _, s := range a {
		s.Threads = len(s.threads)
		out = append(out, s.WaitSite)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Total != out[j].Total {
			return out[i].Total > out[j].Total
		}
		return siteKey(out[i]) < siteKey(out[j])
	})
	if len(out) == 0 {
		return nil
	}
	return out[:min(len(out), maxSites)]
}

func siteKey(s WaitSite) string {
	k := s.Class + s.Kind + s.Reason
	for _, f := range s.Stack {
		k += "\x00" + f.Func
	}
	return k
}

func stackHas(st *stackTrace, names []string) bool {
	if st == nil {
		return false
	}
	for i := range st.Frames {
		name := frameName(&st.Frames[i])
		for _, n := range names {
			if name == n {
				return true
			}
		}
	}
	return false
}

// wait files a thread's blocking event as waiting for work, for a lock or
// blocked otherwise in its work when the thread is one of a pool: an
// executor's worker or a thread named like others (any implementation,
// told by how it waits).
func (a *threadAgg) wait(thread string, st *stackTrace, d time.Duration, lock bool) {
	if thread == "" {
		return
	}
	executor := stackHas(st, workerFrames)
	if _, named := PoolName(thread); !executor && !named {
		return
	}
	w := a.perThread[thread]
	if w == nil {
		if len(a.perThread) >= 100_000 {
			return
		}
		w = &threadWait{}
		a.perThread[thread] = w
	}
	w.executor = w.executor || executor
	switch {
	case isTaskWait(st):
		w.idle += d
	case lock:
		w.locked += d
	default:
		w.blocked += d
		w.eventLoop = w.eventLoop || inEventLoop(st)
		pool, ok := PoolName(thread)
		if !ok {
			pool = thread
		}
		a.tasks.add(st, pool, "", "", thread, d)
	}
}

// isTaskWait reports whether a worker's stack is waiting for work: a
// pool's own wait for its next job (getTask, awaitWork, Jetty's
// idleJobPoll...), ForkJoinPool.runWorker right under the park with no
// task's frame between, or a queue's take or poll (or a monitor's wait)
// called right from the thread's own loop, as a hand-made pool waits.
func isTaskWait(st *stackTrace) bool {
	queue := false
	for i := range st.Frames {
		name := frameName(&st.Frames[i])
		if slices.Contains(taskWaitFrames, name) {
			return true
		}
		switch {
		case isQueueTake(name) || strings.HasPrefix(name, "java.lang.Object.wait"): // wait0 below wait from JDK 21
			queue = true
		case strings.HasPrefix(name, "java.util.concurrent.") || strings.HasPrefix(name, "jdk.internal.misc."):
		default:
			// The first frame past the wait: the thread's loop when only
			// the thread's start is below it.
			return queue && threadLoop(st.Frames[i+1:])
		}
	}
	return false
}

// isQueueTake reports whether a frame takes from a blocking queue: a
// class named ...Queue or ...Deque (the JDK's, Tomcat's TaskQueue, Jetty's
// BlockingArrayQueue), its method take, poll or transfer.
func isQueueTake(name string) bool {
	i := strings.LastIndexByte(name, '.')
	if i < 0 {
		return false
	}
	class, method := name[:i], name[i+1:]
	class = class[strings.LastIndexByte(class, '.')+1:]
	if j := strings.IndexByte(class, '$'); j >= 0 {
		class = class[:j]
	}
	if !strings.HasSuffix(class, "Queue") && !strings.HasSuffix(class, "Deque") {
		return false
	}
	return strings.HasPrefix(method, "take") || strings.HasPrefix(method, "poll") || method == "transfer"
}

// threadLoop reports whether frames (outward from a thread's loop) are
// only how the thread started: Thread.run and its kin, and lambdas.
func threadLoop(frames []frame) bool {
	for i := range frames {
		name := frameName(&frames[i])
		if !strings.HasPrefix(name, "java.lang.Thread.") && !strings.Contains(name, "$$Lambda") {
			return false
		}
	}
	return true
}

// inEventLoop reports whether a stack runs inside an event loop's run
// (Netty's NioEventLoop.run, EpollEventLoop.run, SingleThreadIoEventLoop.run).
func inEventLoop(st *stackTrace) bool {
	for i := range st.Frames {
		if name := frameName(&st.Frames[i]); strings.HasSuffix(name, "EventLoop.run") && strings.HasPrefix(name, "io.netty.") {
			return true
		}
	}
	return false
}

// add files one of the thread events, and the monitor and CPU load events
// the converter also reads.
func (a *threadAgg) add(typ string, v *values) {
	d := time.Duration(v.Duration)
	thread := v.EventThread.name()
	switch typ {
	case "ExecutionSample":
		a.see(v.SampledThread.name(), v.StartTime, v.StartTime)
	case "CPUTimeSample":
		a.see(thread, v.StartTime, v.StartTime)
	case "JavaMonitorEnter", "ThreadPark", "ThreadSleep", "JavaMonitorWait", "SocketRead":
		a.see(thread, v.StartTime, v.StartTime.Add(max(d, 0)))
	}
	switch typ {
	case "VirtualThreadPinned":
		a.pinned.add(v.StackTrace, "", v.BlockingOperation, v.PinnedReason, thread, d)
	case "JavaMonitorEnter":
		a.locks.add(v.StackTrace, javaName(v.MonitorClass), "monitor", "", thread, d)
		a.wait(thread, v.StackTrace, d, true)
	case "ThreadPark":
		// An idle worker queueing for its executor's queue lock waits for
		// work, not for a lock that holds up a request.
		c := javaName(v.ParkedClass)
		if isLockClass(c) && (v.StackTrace == nil || !isTaskWait(v.StackTrace)) {
			a.locks.add(v.StackTrace, c, "lock", "", thread, d)
		}
		a.wait(thread, v.StackTrace, d, isLockClass(c))
	case "ThreadSleep", "JavaMonitorWait", "SocketRead":
		a.wait(thread, v.StackTrace, d, false)
	case "ExecutionSample":
		if len(a.samples) < 100_000 || a.samples[v.SampledThread.name()] > 0 {
			a.samples[v.SampledThread.name()]++
		}
	case "CPUTimeSample":
		if len(a.cpuTimeSamples) < 100_000 || a.cpuTimeSamples[thread] > 0 {
			a.cpuTimeSamples[thread]++
		}
	case "JavaThreadStatistics":
		a.liveMax = max(a.liveMax, v.ActiveCount, v.PeakCount)
	case "ThreadStart":
		a.started++
	case "ThreadContextSwitchRate":
		a.csSum += v.SwitchRate
		a.csMax = max(a.csMax, v.SwitchRate)
		a.csN++
	case "CPULoad":
		// The JVM's first reading has nothing to compare with: all zeros.
		if len(a.cpu) < maxCPULoads && (v.MachineTotal > 0 || v.JVMUser > 0 || v.JVMSystem > 0) {
			a.cpu = append(a.cpu, CPULoad{Time: v.StartTime, JVMUser: v.JVMUser, JVMSystem: v.JVMSystem, Machine: v.MachineTotal})
		}
	}
}

// see widens a thread's window of activity.
func (a *threadAgg) see(thread string, from, to time.Time) {
	if thread == "" || from.IsZero() {
		return
	}
	w := a.seen[thread]
	if w == nil {
		if len(a.seen) >= 100_000 {
			return
		}
		a.seen[thread] = &[2]time.Time{from, to}
		return
	}
	if from.Before(w[0]) {
		w[0] = from
	}
	if to.After(w[1]) {
		w[1] = to
	}
}

// finish fills t from what was added; loads are the threads'
// jdk.ThreadCPULoad by name, over periods periods (threadAcc.load).
func (a *threadAgg) finish(loads map[string]*threadAcc, periods int) Threading {
	t := Threading{Pinned: a.pinned.finish(), LockWaits: a.locks.finish(), TaskWaits: a.tasks.finish(), Started: a.started, LiveMax: a.liveMax}
	if a.csN > 0 {
		t.ContextSwitchRate, t.ContextSwitchRateMax, t.ContextSwitchSamples = a.csSum/float64(a.csN), a.csMax, a.csN
	}
	sort.SliceStable(a.cpu, func(i, j int) bool { return a.cpu[i].Time.Before(a.cpu[j].Time) })
	t.CPULoad = a.cpu
	t.Pools = a.pools(loads, periods)
	return t
}

// pools groups the threads seen (CPU load, samples, waits) by name.
func (a *threadAgg) pools(loads map[string]*threadAcc, periods int) []Pool {
	names := map[string]bool{}
	for n := range loads {
		names[n] = true
	}
	for n := range a.samples {
		names[n] = true
	}
	for n := range a.perThread {
		names[n] = true
	}
	type group struct {
		Pool
		first, last time.Time
	}
	groups := map[string]*group{}
	// In name order: a pool's CPU is a sum of floats, the same whatever
	// order the recording listed its threads in.
	for _, n := range slices.Sorted(maps.Keys(names)) {
		pn, ok := PoolName(n)
		if !ok {
			continue
		}
		g := groups[pn]
		if g == nil {
			g = &group{Pool: Pool{Name: pn}}
			groups[pn] = g
		}
		g.Threads++
		if l := loads[n]; l != nil && l.n > 0 {
			user, system := l.load(periods)
			cpu := user + system
			g.CPU += cpu
			if cpu > g.BusiestCPU || cpu == g.BusiestCPU && (g.Busiest == "" || n < g.Busiest) {
				g.Busiest, g.BusiestCPU = n, cpu
			}
		}
		s := a.samples[n]
		g.Samples += s
		if s > g.BusiestSamples || s == g.BusiestSamples && s > 0 && n < g.BusiestSampled {
			g.BusiestSamples, g.BusiestSampled = s, n
		}
		if w := a.seen[n]; w != nil {
			if g.first.IsZero() || w[0].Before(g.first) {
				g.first = w[0]
			}
			if w[1].After(g.last) {
				g.last = w[1]
			}
		}
		if w := a.perThread[n]; w != nil {
			g.Executor = g.Executor || w.executor
			g.EventLoop = g.EventLoop || w.eventLoop
			g.Blocked += w.blocked
			g.Locked += w.locked
			g.Idle += w.idle
		}
	}
	var out []Pool
	for _, g := range groups {
		if g.Threads < 2 && !g.Executor {
			continue
		}
		if g.last.After(g.first) {
			g.Window = g.last.Sub(g.first)
		}
		out = append(out, g.Pool)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].CPU != out[j].CPU {
			return out[i].CPU > out[j].CPU
		}
		if out[i].Samples != out[j].Samples {
			return out[i].Samples > out[j].Samples
		}
		return out[i].Name < out[j].Name
	})
	return out[:min(len(out), maxPools)]
}

// jvmThreadPrefixes are the JVM's own threads, which are not a pool the
// service sized.
var jvmThreadPrefixes = []string{
	"C1 CompilerThread", "C2 CompilerThread", "JFR ", "GC Thread", "G1 ", "VM ",
	"Attach Listener", "Signal Dispatcher", "Reference Handler", "Finalizer",
	"Common-Cleaner", "Notification Thread", "Service Thread", "Monitor Deflation",
	"Sweeper thread", "process reaper", "Cleaner-",
}

// PoolName is a thread's name without the number that tells the threads of
// a pool apart: "pool-1-thread-3" is "pool-1-thread", "worker-7" is
// "worker", "http-nio-8080-exec-10" is "http-nio-8080-exec". ok is false
// for the JVM's own threads and for names without a trailing number.
func PoolName(thread string) (string, bool) {
	for _, p := range jvmThreadPrefixes {
		if strings.HasPrefix(thread, p) {
			return "", false
		}
	}
	base := strings.TrimRight(thread, "0123456789")
	if base == thread || base == "" {
		return "", false
	}
	base = strings.TrimRight(base, "-_#. ")
	if base == "" {
		return "", false
	}
	return base, true
}
