package trace

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"runtime"
	rtrace "runtime/trace"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// record returns the execution trace of work, written by the Go running
// the test: the format under test is the current one.
func record(t testing.TB, work func()) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := rtrace.Start(&buf); err != nil {
		t.Fatalf("start trace: %v", err)
	}
	work()
	rtrace.Stop()
	return buf.Bytes()
}

func summarize(t testing.TB, data []byte) *Summary {
	t.Helper()
	s, err := Summarize(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("summarize a %d-byte trace: %v", len(data), err)
	}
	return s
}

// sender is the goroutine the channel tests create, so its sites can be found.
func sender(ch chan<- int, n int, wg *sync.WaitGroup) {
	defer wg.Done()
	for i := range n {
		ch <- i
	}
}

// contend has `senders` goroutines push `total` values through one
// unbuffered channel drained by a single receiver.
func contend(senders, total int) {
	ch := make(chan int)
	var wg sync.WaitGroup
	for range senders {
		wg.Add(1)
		go sender(ch, total/senders, &wg)
	}
	done := make(chan struct{})
	go func() {
		for range ch {
		}
		close(done)
	}()
	wg.Wait()
	close(ch)
	<-done
}

func TestReadsTheCurrentFormat(t *testing.T) {
	data := record(t, func() { contend(4, 2000) })
	if !bytes.HasPrefix(data, []byte("go 1.")) {
		t.Fatalf("unexpected header %q", data[:16])
	}
	s := summarize(t, data)
	want := strings.TrimPrefix(runtime.Version(), "go")
	if !strings.HasPrefix(want, strings.TrimPrefix(s.GoVersion, "go")) {
		t.Errorf("trace version %s, Go running the test %s", s.GoVersion, runtime.Version())
	}
	if s.Events < 1000 || s.Window <= 0 || s.GOMAXPROCS != runtime.GOMAXPROCS(0) {
		t.Errorf("events %d, window %v, GOMAXPROCS %d (want %d)", s.Events, s.Window, s.GOMAXPROCS, runtime.GOMAXPROCS(0))
	}
}

func TestManyContendingGoroutinesVersusFew(t *testing.T) {
	const total = 20000
	many := summarize(t, record(t, func() { contend(200, total) }))
	few := summarize(t, record(t, func() { contend(2, total) }))

	if many.Goroutines.Created < 200 || few.Goroutines.Created < 2 || few.Goroutines.Created > 40 {
		t.Errorf("created: many %d, few %d", many.Goroutines.Created, few.Goroutines.Created)
	}
	if many.Goroutines.Max < 100 || few.Goroutines.Max > 60 {
		t.Errorf("max goroutines: many %d (want >= 100), few %d", many.Goroutines.Max, few.Goroutines.Max)
	}
	if many.Goroutines.Ended < 200 || many.Goroutines.Lifetime.Count < 200 || many.Goroutines.Lifetime.P50 <= 0 {
		t.Errorf("lifetimes: ended %d, %v", many.Goroutines.Ended, many.Goroutines.Lifetime)
	}
	if many.Goroutines.CreatedPerSec <= 0 {
		t.Errorf("created/s = %v", many.Goroutines.CreatedPerSec)
	}
	// Every sender waits its turn, blocked on the channel or, once the
	// receiver has taken its value, queued for a CPU: on average far more
	// goroutines wait with 200 senders than with 2.
	waiting := func(s *Summary) float64 {
		return (s.Blocked[ReasonChannel] + s.Runnable).Seconds() / s.Window.Seconds()
	}
	if waiting(many) < 20 || waiting(few) > 8 || many.Blocked[ReasonChannel] <= 0 {
		t.Errorf("goroutines waiting on average: many %.1f, few %.1f (channel-blocked %v)", waiting(many), waiting(few), many.Blocked[ReasonChannel])
	}
	if many.BlockedByReason["chan send"] <= 0 {
		t.Errorf("no chan send reason: %v", many.BlockedByReason)
	}

	top := many.Goroutines.Sites[0]
	if !strings.HasSuffix(top.Entry, "trace.sender") || top.Created != 200 {
		t.Fatalf("top site = %+v, want 200 goroutines entering trace.sender", top)
	}
	if len(top.Stack) == 0 || !strings.HasSuffix(top.Stack[0].Func, "trace.contend") || filepath.Base(top.Stack[0].File) != "trace_test.go" || top.Stack[0].Line == 0 {
		t.Errorf("creating frame = %+v, want trace.contend at trace_test.go:<go statement>", top.Stack)
	}
	if top.Ended != 200 || top.MeanLifetime() <= 0 || top.Running <= 0 || top.Blocked <= 0 {
		t.Errorf("site accounting: %+v", top)
	}
	if many.SchedLatency.Count == 0 || many.SchedLatency.P99 < many.SchedLatency.P50 || many.SchedLatency.Max < many.SchedLatency.P99 {
		t.Errorf("scheduling latency %v", many.SchedLatency)
	}
}

func spin(d time.Duration) {
	for end := time.Now().Add(d); time.Now().Before(end); {
	}
}

// ticks wakes a goroutine every millisecond for d and reports nothing: its
// runnable -> running delays are what the trace measures.
func ticks(d time.Duration) {
	tk := time.NewTicker(time.Millisecond)
	defer tk.Stop()
	for end := time.Now().Add(d); time.Now().Before(end); {
		<-tk.C
	}
}

func TestSchedulingLatencyUnderSaturation(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	const d = 300 * time.Millisecond
	idle := summarize(t, record(t, func() { ticks(d) }))
	busy := summarize(t, record(t, func() {
		var wg sync.WaitGroup
		for range 8 { // 8 CPU-bound goroutines on 2 Ps: each waits its turn
			wg.Go(func() { spin(d) })
		}
		ticks(d)
		wg.Wait()
	}))
	t.Logf("idle: %v; busy: %v", idle.SchedLatency, busy.SchedLatency)
	if busy.SchedLatency.P99 < 10*time.Millisecond {
		t.Errorf("saturated p99 runnable->running = %v, want >= 10ms", busy.SchedLatency.P99)
	}
	if idle.SchedLatency.P99*4 > busy.SchedLatency.P99 {
		t.Errorf("idle p99 %v not well below saturated p99 %v", idle.SchedLatency.P99, busy.SchedLatency.P99)
	}
	if busy.Runnable <= idle.Runnable || busy.GOMAXPROCS != 2 {
		t.Errorf("runnable time busy %v idle %v, GOMAXPROCS %d", busy.Runnable, idle.Runnable, busy.GOMAXPROCS)
	}
}

func TestNetworkPollLatency(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Skip("no loopback:", err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		_, _ = io.Copy(c, c)
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s := summarize(t, record(t, func() {
		b := make([]byte, 1)
		for range 50 {
			if _, err := c.Write(b); err != nil {
				t.Error(err)
				return
			}
			if _, err := io.ReadFull(c, b); err != nil {
				t.Error(err)
				return
			}
		}
	}))
	if s.NetPollLatency.Count < 40 || s.Blocked[ReasonNetwork] <= 0 {
		t.Errorf("network: %v, blocked %v", s.NetPollLatency, s.Blocked[ReasonNetwork])
	}
	if s.NetPollLatency.Count > s.SchedLatency.Count {
		t.Errorf("net-poll delays (%d) are a subset of all delays (%d)", s.NetPollLatency.Count, s.SchedLatency.Count)
	}
}

var sink [][]byte

func TestGarbageCollection(t *testing.T) {
	s := summarize(t, record(t, func() {
		for range 2 {
			sink = append(sink[:0], make([]byte, 1<<20))
			runtime.GC()
		}
	}))
	if s.GC.Cycles < 2 || s.GC.Mark.Count < 2 || s.GC.MarkTime <= 0 {
		t.Errorf("GC cycles %d, mark %v, mark time %v", s.GC.Cycles, s.GC.Mark, s.GC.MarkTime)
	}
	// Each cycle stops the world twice (sweep termination, mark termination).
	if s.GC.STW.Count < 4 || s.GC.STW.Total <= 0 {
		t.Errorf("STW pauses %v by reason %v", s.GC.STW, s.GC.STWByReason)
	}
	for reason := range s.GC.STWByReason {
		if strings.Contains(reason, "trace") {
			t.Errorf("the tracer's own pause %q counted", reason)
		}
	}
	if s.GC.HeapGoal == 0 {
		t.Error("no heap goal metric")
	}
}

func TestLifetimeOfShortGoroutines(t *testing.T) {
	var n atomic.Int64
	s := summarize(t, record(t, func() {
		var wg sync.WaitGroup
		for range 500 {
			wg.Go(func() { n.Add(1) })
		}
		wg.Wait()
	}))
	if s.Goroutines.Created < 500 || s.Goroutines.Ended < 500 {
		t.Fatalf("created %d ended %d", s.Goroutines.Created, s.Goroutines.Ended)
	}
	// A goroutine that adds one to a counter lives microseconds, not a window.
	if l := s.Goroutines.Lifetime; l.P50 > 50*time.Millisecond || l.P50 <= 0 {
		t.Errorf("lifetime %v", l)
	}
	if s.Goroutines.AtStart == 0 || s.Goroutines.AtEnd > s.Goroutines.Max {
		t.Errorf("at start %d, at end %d, max %d", s.Goroutines.AtStart, s.Goroutines.AtEnd, s.Goroutines.Max)
	}
}

func TestRejectsOtherContent(t *testing.T) {
	for name, data := range map[string][]byte{
		"empty":          nil,
		"text":           []byte("hello, world, this is not a trace\n"),
		"profile":        {0x1f, 0x8b, 8, 0, 0, 0, 0, 0},
		"other version":  []byte("go 1.99 trace\x00\x00\x00\x00\x00\x00"),
		"short header":   []byte("go 1.2"),
		"bad header pad": []byte("go 1.26 trace!!!......"),
	} {
		_, err := Summarize(bytes.NewReader(data))
		if !errors.Is(err, ErrNotTrace) {
			t.Errorf("%s: err = %v, want ErrNotTrace", name, err)
		}
	}
}

func TestTruncatedTraceIsAnError(t *testing.T) {
	data := record(t, func() { contend(8, 2000) })
	for _, n := range []int{16, 17, len(data) / 3, len(data) / 2, len(data) - 1} {
		_, err := Summarize(bytes.NewReader(data[:n]))
		if !errors.Is(err, ErrCorrupt) {
			t.Errorf("cut at %d of %d bytes: err = %v, want ErrCorrupt", n, len(data), err)
		}
	}
	// Flipped bytes in the middle must be an error or a summary, never a panic.
	bad := bytes.Clone(data)
	for i := len(bad) / 2; i < len(bad)/2+64 && i < len(bad); i++ {
		bad[i] ^= 0xA5
	}
	_, _ = Summarize(bytes.NewReader(bad))
}

func TestSummarizeFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "trace.out")
	if err := os.WriteFile(path, record(t, func() { contend(2, 100) }), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := SummarizeFile(path); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("nope"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := SummarizeFile(path); !errors.Is(err, ErrNotTrace) || !strings.Contains(err.Error(), path) {
		t.Errorf("err = %v, want ErrNotTrace naming the file", err)
	}
}

func TestCategory(t *testing.T) {
	for reason, want := range map[string]Reason{
		"sync": ReasonSync, "sync.(*Cond).Wait": ReasonSync, "chan receive": ReasonChannel,
		"select": ReasonChannel, "network": ReasonNetwork, "sleep": ReasonSleep,
		"GC mark assist wait for work": ReasonGC, "system goroutine wait": ReasonRuntime,
		"unspecified": ReasonOther, "": ReasonOther,
	} {
		if got := Category(reason); got != want {
			t.Errorf("Category(%q) = %s, want %s", reason, got, want)
		}
	}
}

var sharedMu sync.Mutex

// holdShared takes one global lock per "request" and holds it across work,
// so the other workers queue on it.
func holdShared(n int) {
	for range n {
		sharedMu.Lock()
		spin(200 * time.Microsecond)
		sharedMu.Unlock()
	}
}

func TestLockWaitIsTheMutexPartOfSyncBlocking(t *testing.T) {
	locked := summarize(t, record(t, func() {
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() { holdShared(50) })
		}
		wg.Wait()
	}))
	if locked.LockWait <= 0 || len(locked.LockSites) == 0 {
		t.Fatalf("no lock wait in a trace of 8 goroutines sharing one mutex: %v, sync %v", locked.LockWait, locked.Blocked[ReasonSync])
	}
	if top := locked.LockSites[0]; !strings.HasSuffix(top.Func, "trace.holdShared") || top.Blocks == 0 || top.Wait <= 0 || top.Line == 0 {
		t.Errorf("top lock site %+v, want trace.holdShared", top)
	}
	// 8 goroutines and 2 Ps: most of the workers' time is queueing.
	if locked.LockWait < locked.Running {
		t.Errorf("lock wait %v below running %v", locked.LockWait, locked.Running)
	}

	// Waiting for a WaitGroup is sync blocking, not a lock.
	waited := summarize(t, record(t, func() {
		var wg sync.WaitGroup
		for range 4 {
			wg.Go(func() { spin(20 * time.Millisecond) })
		}
		wg.Wait()
	}))
	if waited.Blocked[ReasonSync] <= 0 || waited.LockWait != 0 || len(waited.LockSites) != 0 {
		t.Errorf("WaitGroup waits (sync %v) counted as lock waits: %v %+v", waited.Blocked[ReasonSync], waited.LockWait, waited.LockSites)
	}
}

// A trace cut short after whole generations (the runtime starts one about
// every second) keeps what was read, marked partial with the reason; a
// trace cut inside its first generation has nothing to keep and is an error.
func TestTruncatedTraceKeptAsPartial(t *testing.T) {
	data := record(t, func() {
		for end := time.Now().Add(1300 * time.Millisecond); time.Now().Before(end); {
			contend(4, 400)
			time.Sleep(5 * time.Millisecond)
		}
	})
	whole := summarize(t, data)
	if whole.Partial != "" {
		t.Fatalf("whole trace marked partial: %s", whole.Partial)
	}
	cut, err := Summarize(bytes.NewReader(data[:len(data)-1]))
	if err != nil {
		t.Fatalf("trace cut by one byte: %v", err)
	}
	if cut.Partial == "" || !strings.Contains(cut.Partial, "cut short") {
		t.Errorf("cut trace not marked partial: %q", cut.Partial)
	}
	if cut.Events == 0 || cut.Events >= whole.Events || cut.Goroutines.Created == 0 {
		t.Errorf("partial summary: %d events of %d, %d goroutines created", cut.Events, whole.Events, cut.Goroutines.Created)
	}
}
