package mem002

import (
	"bytes"
	"os"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/pprof/profile"

	"github.com/perfdoctor/perfdoctor/bundle"
	"github.com/perfdoctor/perfdoctor/evidence"
	"github.com/perfdoctor/perfdoctor/rules"
)

func TestMain(m *testing.M) {
	runtime.MemProfileRate = 16 << 10 // fine sampling, so sites are exact enough
	os.Exit(m.Run())
}

// heap writes the in-use heap profile as /debug/pprof/heap serves it, after
// a GC so in-use figures are current.
func heap(t *testing.T) *profile.Profile {
	t.Helper()
	runtime.GC()
	runtime.GC() // the profile lags a cycle: frees of the previous test must show
	var buf bytes.Buffer
	if err := pprof.Lookup("heap").WriteTo(&buf, 0); err != nil {
		t.Fatal(err)
	}
	p, err := profile.ParseData(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Millisecond) // distinct TimeNanos
	return p
}

// runtimeMetrics reads every scalar and the goroutine count, as the agent serves them.
func runtimeMetrics() *bundle.RuntimeStats {
	descs := metrics.All()
	samples := make([]metrics.Sample, len(descs))
	for i, d := range descs {
		samples[i].Name = d.Name
	}
	metrics.Read(samples)
	rm := &bundle.RuntimeMetrics{Time: time.Now(), Values: map[string]float64{}}
	for _, s := range samples {
		switch s.Value.Kind() {
		case metrics.KindUint64:
			rm.Values[s.Name] = float64(s.Value.Uint64())
		case metrics.KindFloat64:
			rm.Values[s.Name] = s.Value.Float64()
		}
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return &bundle.RuntimeStats{Time: rm.Time, Source: "test", Runtime: rm, NumGC: uint64(ms.NumGC), LastGC: ms.LastGC}
}

func evidenceOf(series ...*profile.Profile) *evidence.Evidence {
	ev := evidence.New("test")
	ev.Profiles[evidence.HeapStart] = series[0]
	ev.Profiles[evidence.Heap] = series[len(series)-1]
	if len(series) > 2 {
		ev.HeapSeries = series
	}
	return ev
}

type record struct {
	id      int
	payload []byte
	next    *record
}

var leaky = map[int]*record{}

//go:noinline
func remember(n, size int) {
	for range n {
		id := len(leaky)
		leaky[id] = &record{id: id, payload: make([]byte, size)}
	}
}

var stable = map[int]*record{}

//go:noinline
func rotate(n, size int) {
	for i := range n {
		stable[i%256] = &record{id: i, payload: make([]byte, size)} // the map never exceeds 256 entries
	}
}

func one(t *testing.T, ev *evidence.Evidence) rules.Finding {
	t.Helper()
	res := rules.Run(ev, []*rules.Rule{Rule})
	if len(res.Findings) != 1 {
		t.Fatalf("want one memory-growth finding, got %d (not checked %v)", len(res.Findings), res.NotChecked)
	}
	f := res.Findings[0]
	t.Logf("%s %s: %s", f.Severity, f.Rule, f.Summary)
	if f.Class != "memory-growth" || f.Resource != "memory" {
		t.Errorf("class %s resource %s", f.Class, f.Resource)
	}
	return f
}

func topSite(t *testing.T, f rules.Finding, fn string) {
	t.Helper()
	if len(f.Locations) == 0 || !strings.HasSuffix(f.Locations[0].Function, fn) {
		t.Errorf("top growing site %v, want %s", f.Locations, fn)
	}
}

func TestLeakInSeriesIsHigh(t *testing.T) {
	defer clear(leaky)
	series := []*profile.Profile{heap(t)}
	for range 3 {
		remember(4000, 4<<10) // +16 MiB a step, never trimmed
		series = append(series, heap(t))
	}
	f := one(t, evidenceOf(series...))
	if f.Severity != rules.High {
		t.Errorf("severity %s, want high", f.Severity)
	}
	if !strings.Contains(f.Summary, "leak") || !strings.Contains(f.Fix, "every one of 4 snapshots") {
		t.Errorf("summary %q fix %q", f.Summary, f.Fix)
	}
	topSite(t, f, "mem002.remember")
}

func TestLeakWithFlatGoroutinesIsHigh(t *testing.T) {
	defer clear(leaky)
	ev := evidenceOf(heap(t), nil)
	ev.MetricsStart = runtimeMetrics()
	remember(8000, 4<<10)
	ev.Profiles[evidence.Heap] = heap(t)
	ev.MetricsEnd = runtimeMetrics()
	f := one(t, ev)
	if f.Severity != rules.High || !strings.Contains(f.Fix, "goroutine count stayed flat") {
		t.Errorf("severity %s, fix %q", f.Severity, f.Fix)
	}
	topSite(t, f, "mem002.remember")
}

func TestTwoSnapshotsAloneCannotTell(t *testing.T) {
	defer clear(leaky)
	before := heap(t)
	remember(8000, 4<<10)
	f := one(t, evidenceOf(before, heap(t)))
	if f.Severity > rules.Medium || !strings.Contains(f.Summary, "cannot tell") {
		t.Errorf("severity %s summary %q", f.Severity, f.Summary)
	}
}

func TestStableMapIsSilent(t *testing.T) {
	defer clear(stable)
	rotate(256, 4<<10) // warm: the map is at its size
	before := heap(t)
	rotate(20000, 4<<10) // 80 MiB allocated, nothing retained beyond 256 entries
	res := rules.Run(evidenceOf(before, heap(t)), []*rules.Rule{Rule})
	if len(res.Findings) != 0 {
		t.Errorf("stable heap reported: %+v", res.Findings)
	}
}

// A backlog: work held by goroutines waiting for a slow consumer. The heap
// grows with the goroutine count, and that is a throughput limit.
func TestBacklogTrackingGoroutinesIsLow(t *testing.T) {
	queue := make(chan []byte) // a slow consumer: nobody receives until the end
	ev := evidenceOf(heap(t), nil)
	ev.MetricsStart = runtimeMetrics()
	var made atomic.Int32
	for range 1000 {
		go func() { // one goroutine per job, holding it
			job := make([]byte, 16<<10)
			made.Add(1)
			queue <- job
		}()
	}
	for made.Load() < 1000 {
		time.Sleep(time.Millisecond)
	}
	ev.Profiles[evidence.Heap] = heap(t)
	ev.MetricsEnd = runtimeMetrics()
	for range 1000 {
		<-queue
	}
	f := one(t, ev)
	if f.Severity != rules.Low || !strings.Contains(f.Summary, "backlog") {
		t.Errorf("severity %s summary %q", f.Severity, f.Summary)
	}
}

var backlog [][]byte

func TestSeriesThatDrainsIsBacklog(t *testing.T) {
	before := heap(t)
	for range 4000 {
		backlog = append(backlog, make([]byte, 8<<10))
	}
	peak := heap(t)
	backlog = backlog[:1000:1000] // most of it served
	backlog = append([][]byte(nil), backlog...)
	f := one(t, evidenceOf(before, peak, heap(t)))
	backlog = nil
	if f.Severity != rules.Low || !strings.Contains(f.Fix, "drains") {
		t.Errorf("severity %s fix %q", f.Severity, f.Fix)
	}
}

func TestNeedsTwoHeaps(t *testing.T) {
	ev := evidence.New("test")
	ev.Profiles[evidence.Heap] = heap(t)
	res := rules.Run(ev, []*rules.Rule{Rule})
	if len(res.Findings) != 0 || len(res.NotChecked) != 1 || !strings.Contains(res.NotChecked[0].Reason, "start and end") {
		t.Errorf("%+v", res)
	}
}

// heapOf is a hand-made heap profile: one sample per stack (leaf first) with
// its in-use bytes and objects.
func heapOf(stacks map[string]int64) *profile.Profile {
	p := &profile.Profile{SampleType: []*profile.ValueType{
		{Type: "alloc_objects", Unit: "count"}, {Type: "alloc_space", Unit: "bytes"},
		{Type: "inuse_objects", Unit: "count"}, {Type: "inuse_space", Unit: "bytes"}}}
	funcs := map[string]*profile.Function{}
	for stack, bytes := range stacks {
		s := &profile.Sample{Value: []int64{1, bytes, 1, bytes}}
		for _, fn := range strings.Split(stack, ";") {
			f := funcs[fn]
			if f == nil {
				f = &profile.Function{ID: uint64(len(funcs) + 1), Name: fn, Filename: "x.go"}
				funcs[fn] = f
				p.Function = append(p.Function, f)
			}
			loc := &profile.Location{ID: uint64(len(p.Location) + 1), Line: []profile.Line{{Function: f, Line: 1}}}
			p.Location = append(p.Location, loc)
			s.Location = append(s.Location, loc)
		}
		p.Sample = append(p.Sample, s)
	}
	return p
}

// The execution trace perfdoctor collect runs across the end-of-window heap
// profile buffers its output on the heap: that is the observation, not the
// service's growth.
func TestProfilerAllocationsAreLeftOut(t *testing.T) {
	const app = "main.serve"
	const tracer = "bytes.growSlice;runtime/trace.Start.func1;net/http/pprof.Trace"
	start := heapOf(map[string]int64{app: 2 << 20})
	end := heapOf(map[string]int64{app: 2 << 20, tracer: 6 << 20})
	growth, base, total := Diff(start, end)
	if len(growth) != 0 || base != 2<<20 || total != 2<<20 {
		t.Errorf("growth %v, totals %d → %d: the tracer's buffers counted", growth, base, total)
	}
	res := rules.Run(evidenceOf(start, end), []*rules.Rule{Rule})
	if len(res.Findings) != 0 {
		t.Errorf("finding on the profiler's own allocations: %+v", res.Findings[0])
	}
}

// A short trace's goroutine counts are instants: the jitter of short-lived
// goroutines must not read as a trend once scaled to the window.
func TestFlatIsJudgedUnscaled(t *testing.T) {
	// 25 → 30 in a 1 s trace, scaled to a 5 s window: 5 → 30.
	g := goroutines{start: 5, end: 30, rawStart: 25, rawEnd: 30}
	if g.tracks() || !g.flat() {
		t.Errorf("tracks %v flat %v, want flat", g.tracks(), g.flat())
	}
	// A real rise, observed as such.
	g = goroutines{start: 100, end: 1100, rawStart: 900, rawEnd: 1100}
	if !g.tracks() || g.flat() {
		t.Errorf("tracks %v flat %v, want tracks", g.tracks(), g.flat())
	}
	g = goroutines{start: 100, end: 160, rawStart: 100, rawEnd: 160}
	if g.tracks() || g.flat() {
		t.Errorf("tracks %v flat %v, want neither", g.tracks(), g.flat())
	}
}

// Case D1 fixed (GOGC=off under a memory limit): the start profile is from
// a GC at start-up, before the cache was built, and one cycle ran in the
// window. The growth may predate the window: never high.
func TestStaleStartProfileIsAtMostMedium(t *testing.T) {
	defer clear(leaky)
	ev := evidenceOf(heap(t), nil)
	ev.MetricsStart = runtimeMetrics()
	remember(8000, 4<<10)
	ev.Profiles[evidence.Heap] = heap(t)
	ev.MetricsEnd = runtimeMetrics()
	ev.MetricsStart.LastGC = uint64(ev.MetricsStart.Time.Add(-10 * time.Second).UnixNano())
	ev.MetricsEnd.NumGC = ev.MetricsStart.NumGC + 1
	f := one(t, ev)
	if f.Severity > rules.Medium || len(f.Caveats) == 0 || !strings.Contains(f.Caveats[0], "predate the window") {
		t.Errorf("severity %s, caveats %q", f.Severity, f.Caveats)
	}
}

// heapAt is a one-site heap profile at time at: allocated counts since
// start, and in use.
func heapAt(fn string, at time.Time, allocBytes, inuseBytes int64) *profile.Profile {
	p := heapOf(map[string]int64{fn: inuseBytes})
	p.Sample[0].Value = []int64{allocBytes >> 10, allocBytes, inuseBytes >> 10, inuseBytes}
	p.TimeNanos = at.UnixNano()
	return p
}

// A site that allocates a lot per GC cycle can show more in use at one
// snapshot than at the other (what its GC's mark phase saw allocated) without
// retaining anything; a leak keeps what it allocates, cycle after cycle.
func TestGrowthWithinOneCyclesAllocationIsInFlight(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	t1 := t0.Add(10 * time.Second)
	for _, tc := range []struct {
		name                 string
		allocStart, allocEnd int64
		inuseStart, inuseEnd int64
		fires                bool
	}{
		// 2 GiB allocated over 100 cycles: 20 MiB per cycle, 10 MiB "growth".
		{"per-request buffers at 10 cycles/s", 1 << 30, 3 << 30, 20 << 20, 30 << 20, false},
		// Everything allocated is kept: 40 MiB growth, 0.4 MiB per cycle.
		{"leak", 20 << 20, 60 << 20, 20 << 20, 60 << 20, true},
	} {
		ev := evidenceOf(heapAt("main.handle", t0, tc.allocStart, tc.inuseStart), heapAt("main.handle", t1, tc.allocEnd, tc.inuseEnd))
		ev.MetricsStart = &bundle.RuntimeStats{Time: t0, NumGC: 1000, LastGC: uint64(t0.UnixNano())}
		ev.MetricsEnd = &bundle.RuntimeStats{Time: t1, NumGC: 1100, LastGC: uint64(t1.UnixNano())}
		res := rules.Run(ev, []*rules.Rule{Rule})
		if got := len(res.Findings) == 1; got != tc.fires {
			t.Errorf("%s: fired=%v, want %v", tc.name, got, tc.fires)
		}
	}
}
