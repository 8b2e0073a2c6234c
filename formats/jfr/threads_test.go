package jfr

import (
	"compress/gzip"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The thread events (pinning, lock parks, pools, context switches, CPU
// load) read natively agree with the JDK's own reader on recordings of the
// JVM thread rules' fixtures (rules/testdata/jfr, JDK 25).
func TestThreadEventsMatchJDKReader(t *testing.T) {
	tool := needTool(t)
	for _, mode := range []string{"pinned", "locks", "smallpool"} {
		t.Run(mode, func(t *testing.T) { matchJDKReader(t, tool, gunzipFixture(t, threadFixture(mode))) })
	}
	// Socket reads and pools other than executors' (JDK 17).
	t.Run("handmade-small", func(t *testing.T) { matchJDKReader(t, tool, gunzipFixture(t, serverFixture("handmade-small"))) })
}

// serverFixture is the path of one of JVM011's servers fixtures.
func serverFixture(name string) string {
	return filepath.Join("..", "..", "rules", "jvm011", "testdata", "servers", name+".jfr.gz")
}

// threadFixture is the path of a JVM thread rules' fixture.
func threadFixture(mode string) string {
	return filepath.Join("..", "..", "rules", "testdata", "jfr", mode+".jfr.gz")
}

func gunzipFixture(t testing.TB, path string) string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	z, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), strings.TrimSuffix(filepath.Base(path), ".gz"))
	w, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(w, z); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return out
}

// What the thread summary holds for the fixtures' workloads.
func TestThreadSummary(t *testing.T) {
	read := func(mode string) Threading {
		rec, err := ReadFile(gunzipFixture(t, threadFixture(mode)))
		if err != nil {
			t.Fatal(err)
		}
		return rec.JVM.Threading
	}
	pinned := read("pinned")
	if len(pinned.Pinned) == 0 || pinned.Pinned[0].Reason != "Native or VM frame on stack" || pinned.Pinned[0].Kind != "LockSupport.park" {
		t.Errorf("pinned: %+v", pinned.Pinned)
	}
	classes := map[string]string{}
	for _, w := range read("locks").LockWaits {
		classes[w.Class] = w.Kind
	}
	if classes["java.lang.Object"] != "monitor" || classes["java.util.concurrent.locks.ReentrantLock$NonfairSync"] != "lock" {
		t.Errorf("lock waits by class: %v", classes)
	}
	small := read("smallpool")
	var pool *Pool
	for i := range small.Pools {
		if small.Pools[i].Name == "pool-1-thread" {
			pool = &small.Pools[i]
		}
	}
	if pool == nil || pool.Threads != 2 || !pool.Executor || pool.Blocked <= 0 || pool.Window <= 0 {
		t.Errorf("small pool: %+v", small.Pools)
	}
	if small.ContextSwitchSamples == 0 || len(small.CPULoad) < 3 || small.LiveMax == 0 {
		t.Errorf("rates: %+v", small)
	}
}

func TestPoolName(t *testing.T) {
	for thread, want := range map[string]string{
		"pool-1-thread-3": "pool-1-thread", "worker-7": "worker", "http-nio-8080-exec-10": "http-nio-8080-exec",
		"ForkJoinPool-1-worker-2": "ForkJoinPool-1-worker", "C2 CompilerThread0": "", "main": "", "42": "",
	} {
		got, ok := PoolName(thread)
		if got != want || ok != (want != "") {
			t.Errorf("PoolName(%q) = %q, %v; want %q", thread, got, ok, want)
		}
	}
}

// Pools of any implementation are read by how their threads wait (the
// servers fixtures of JVM011, 32 connections each waiting on a 20 ms
// downstream): Jetty's QueuedThreadPool, Netty's event loops and a
// hand-made pool are not java.util.concurrent executors, yet their waits
// inside the work (socket reads, parks for a reply) are filed as blocked,
// their waits for work (Jetty's idleJobPoll, the hand-made loop's
// LinkedBlockingQueue.take) as idle.
func TestPoolsByBehaviour(t *testing.T) {
	pool := func(fixture, name string) Pool {
		t.Helper()
		rec, err := ReadFile(gunzipFixture(t, serverFixture(fixture)))
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range rec.JVM.Threading.Pools {
			if strings.HasPrefix(p.Name, name) {
				return p
			}
		}
		t.Fatalf("%s: no pool %s in %+v", fixture, name, rec.JVM.Threading.Pools)
		return Pool{}
	}
	share := func(p Pool, d time.Duration) float64 { return d.Seconds() / p.Window.Seconds() / float64(p.Threads) }
	for _, tc := range []struct {
		fixture, pool  string
		executor, loop bool
		blocked, idle  [2]float64 // shares of the threads' time, low and high
	}{
		{"jetty-small", "qtp", false, false, [2]float64{0.5, 1}, [2]float64{0, 0.01}},
		{"jetty-right", "qtp", false, false, [2]float64{0.5, 1}, [2]float64{0.03, 0.5}},
		{"netty-block", "nioEventLoopGroup-3", false, true, [2]float64{0.8, 1}, [2]float64{0, 0}},
		{"handmade-small", "worker", false, false, [2]float64{0.8, 1}, [2]float64{0, 0.01}},
		{"handmade-right", "worker", false, false, [2]float64{0.2, 0.6}, [2]float64{0.3, 0.8}},
		{"tpe-small", "pool-1-thread", true, false, [2]float64{0.8, 1}, [2]float64{0, 0.01}},
	} {
		p := pool(tc.fixture, tc.pool)
		b, i := share(p, p.Blocked), share(p, p.Idle)
		if p.Executor != tc.executor || p.EventLoop != tc.loop || b < tc.blocked[0] || b > tc.blocked[1] || i < tc.idle[0] || i > tc.idle[1] {
			t.Errorf("%s: %s executor %v, event loop %v, blocked %.2f, idle %.2f", tc.fixture, p.Name, p.Executor, p.EventLoop, b, i)
		}
	}
}

func TestIsQueueTake(t *testing.T) {
	for name, want := range map[string]bool{
		"java.util.concurrent.LinkedBlockingQueue.take":                 true,
		"java.util.concurrent.ArrayBlockingQueue.poll":                  true,
		"java.util.concurrent.SynchronousQueue$TransferStack.transfer":  true,
		"java.util.concurrent.LinkedBlockingDeque.takeFirst":            true,
		"org.eclipse.jetty.util.BlockingArrayQueue.poll":                true,
		"java.util.concurrent.LinkedBlockingQueue.put":                  false,
		"java.util.concurrent.CompletableFuture.get":                    false,
		"com.acme.QueueConsumer.take":                                   false,
		"java.util.concurrent.locks.AbstractQueuedSynchronizer.acquire": false,
	} {
		if got := isQueueTake(name); got != want {
			t.Errorf("isQueueTake(%q) = %v", name, got)
		}
	}
}

// jdk.ThreadCPULoad averages over the recording's periods: a thread seen in
// one of two periods counts half its load then, and two threads of one name
// count both. Before, each name's load was its mean while seen, which made
// a snapshot thread that ran 1 s of 20 look like 0.30 of the machine.
func TestThreadLoadOverThePeriods(t *testing.T) {
	load := func(at, name string, user float64) string {
		return `{"type": "jdk.ThreadCPULoad", "values": {"startTime": "` + at + `", "eventThread": {"javaName": "` + name +
			`"}, "user": ` + strconv.FormatFloat(user, 'f', -1, 64) + `, "system": 0}}`
	}
	const p1, p2 = "2026-01-01T00:00:10.001Z", "2026-01-01T00:00:20.002Z"
	events := []string{
		load(p1, "worker", 0.4), load("2026-01-01T00:00:10.003Z", "snapshot", 0.3), load(p1, "pool-1", 0.1), load(p1, "pool-1", 0.1),
		load(p2, "worker", 0.2), load(p2, "pool-1", 0.1), load(p2, "pool-1", 0.1),
	}
	rec, err := Parse(strings.NewReader(`{"recording": {"events": [` + strings.Join(events, ",") + `]}}`))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, l := range rec.JVM.Threads {
		got[l.Name] = l.User
	}
	want := map[string]float64{"worker": 0.3, "snapshot": 0.15, "pool-1": 0.2}
	for name, w := range want {
		if math.Abs(got[name]-w) > 1e-9 {
			t.Errorf("%s: %.3f, want %.3f", name, got[name], w)
		}
	}
	if math.Abs(rec.JVM.ThreadsCPU-0.65) > 1e-9 {
		t.Errorf("threads' CPU %.3f, want 0.65", rec.JVM.ThreadsCPU)
	}
	if n := threadLoadPeriods(nil); n != 1 {
		t.Errorf("no events: %d periods", n)
	}
}
