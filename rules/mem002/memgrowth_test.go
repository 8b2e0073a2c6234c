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

	"github.com/perfdoctor/perfdoctor/facts"

	"github.com/perfdoctor/perfdoctor/internal/human"

	"github.com/google/pprof/profile"

	"github.com/perfdoctor/perfdoctor/bundle"
	"github.com/perfdoctor/perfdoctor/evidence"
	"github.com/perfdoctor/perfdoctor/evidence/trace"
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
	return &bundle.RuntimeStats{Time: rm.Time, Source: "test", Runtime: rm, NumGC: uint64(ms.NumGC), LastGC: ms.LastGC, NextGC: ms.NextGC, HeapAlloc: ms.HeapAlloc}
}

func evidenceOf(series ...*profile.Profile) *evidence.Evidence {
	ev := evidence.NewBuilder("test").Evidence()
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
	res := rules.Run(facts.New(ev), []*rules.Rule{Rule})
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

var capped = map[int]*record{}

const cappedEntries = 2048

// admit adds n entries to a cache capped at cappedEntries: once full, each
// new entry evicts an old one, so the cache holds at most 2,048 records.
//
//go:noinline
func admit(from, n, size int) {
	for i := from; i < from+n; i++ {
		if len(capped) >= cappedEntries {
			for k := range capped {
				delete(capped, k)
				break
			}
		}
		capped[i] = &record{id: i, payload: make([]byte, size)}
	}
}

// A cache filling to its cap grows, then holds: bounded, not a leak. It
// runs first: earlier tests' leftovers (their goroutines, their freed maps)
// moved its readings from -0.05..0.03 alone to as much as 0.26.
func TestCacheFillingToItsCapIsBounded(t *testing.T) {
	defer clear(capped)
	defer withBallast()()
	series := []*profile.Profile{heap(t)}
	for step := range 4 {
		admit(step*1024, 1024, 8<<10) // +8 MiB a step until 2,048 entries (16 MiB), then evicting
		series = append(series, heap(t))
	}
	logShape(t, series)
	f := one(t, evidenceOf(series...))
	if f.Severity != rules.Low || f.Growing {
		t.Errorf("severity %s growing %v, want low and not growing", f.Severity, f.Growing)
	}
	if !strings.Contains(f.Summary, "levelled off") || strings.Contains(f.Summary, "looks like a leak") {
		t.Errorf("summary %q", f.Summary)
	}
	topSite(t, f, "mem002.admit")

	// The same cache never trimmed keeps its pace: a leak.
	clear(capped)
	defer clear(leaky)
	series = []*profile.Profile{heap(t)}
	for range 4 {
		remember(1024, 8<<10)
		series = append(series, heap(t))
	}
	logShape(t, series)
	if f := one(t, evidenceOf(series...)); !strings.Contains(f.Summary, "looks like a leak") {
		t.Errorf("an untrimmed map growing at an even pace: %q", f.Summary)
	}
}

// A leak whose last snapshots repeat the one before (no collection
// completed between them: a growing heap's goal doubles with it) has not
// levelled off: those snapshots saw nothing.
func TestSnapshotsWithoutACollectionDoNotLevel(t *testing.T) {
	defer clear(leaky)
	defer withBallast()()
	series := []*profile.Profile{heap(t)}
	for range 2 {
		remember(2048, 8<<10) // +16 MiB a step, never trimmed
		series = append(series, heap(t))
	}
	last := series[len(series)-1]
	series = append(series, last.Copy(), last.Copy())
	logShape(t, series)
	if f := one(t, evidenceOf(series...)); strings.Contains(f.Summary, "levelled off") {
		t.Errorf("a leak seen by two snapshots with no collection after them read as levelled off: %q", f.Summary)
	}
}

// logShape logs what the levelled-off test reads: the series' last third's
// growth over its first two thirds'.
func logShape(t *testing.T, series []*profile.Profile) {
	t.Helper()
	n := len(series) - 1
	k := n * 2 / 3
	early, late := inuse(series[k])-inuse(series[0]), inuse(series[n])-inuse(series[k])
	t.Logf("last third's growth over the first two thirds': %.2f (%d then %d bytes)", float64(late)/float64(early), early, late)
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

// ballast keeps the leak tests' heap above the tiny-heap floor, where two
// snapshots are read as they are.
var ballast [][]byte

func withBallast() func() {
	for range 24 {
		ballast = append(ballast, make([]byte, 1<<20))
	}
	return func() { ballast = nil }
}

func TestLeakWithFlatGoroutinesIsHigh(t *testing.T) {
	defer clear(leaky)
	defer withBallast()()
	ev := evidenceOf(heap(t), nil)
	ev.MetricsStart = runtimeMetrics()
	remember(8000, 4<<10)
	time.Sleep(100 * time.Millisecond) // a window, not two forced GCs back to back
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
	res := rules.Run(facts.New(evidenceOf(before, heap(t))), []*rules.Rule{Rule})
	if len(res.Findings) != 0 {
		t.Errorf("stable heap reported: %+v", res.Findings)
	}
}

// A heap profile lags the collector: one taken while a cache was being
// built, read next to runtime statistics taken once the cache is live,
// shows growth the runtime's heap goal does not (casebook B5 read as a
// leak on a busy machine at 0.4 GC cycles/s). The heap did not grow in the
// window: no finding. Statistics from before the growth keep the leak.
func TestProfileCatchingUpWithTheGoalIsNotGrowth(t *testing.T) {
	defer clear(leaky)
	defer withBallast()()
	ev := evidenceOf(heap(t), nil)
	remember(8000, 4<<10) // 32 MiB, live before the window opens
	runtime.GC()
	ev.MetricsStart = runtimeMetrics()
	time.Sleep(100 * time.Millisecond)
	ev.Profiles[evidence.Heap] = heap(t)
	ev.MetricsEnd = runtimeMetrics()
	if res := rules.Run(facts.New(ev), []*rules.Rule{Rule}); len(res.Findings) != 0 {
		t.Errorf("the profile's lag read as growth: %+v", res.Findings[0])
	}

	// Some growth in the window as well: reported, with the lag said and
	// at most medium.
	remember(3000, 4<<10) // 12 MiB
	time.Sleep(100 * time.Millisecond)
	ev.Profiles[evidence.Heap] = heap(t)
	ev.MetricsEnd = runtimeMetrics()
	if f := one(t, ev); f.Severity > rules.Medium || !strings.Contains(strings.Join(f.Caveats, " "), "of the growth is the window's") {
		t.Errorf("growth partly in the window: %s %q %q", f.Severity, f.Summary, f.Caveats)
	}

	clear(leaky)
	ev = evidenceOf(heap(t), nil)
	ev.MetricsStart = runtimeMetrics()
	remember(8000, 4<<10) // 32 MiB, in the window
	time.Sleep(100 * time.Millisecond)
	ev.Profiles[evidence.Heap] = heap(t)
	ev.MetricsEnd = runtimeMetrics()
	if f := one(t, ev); f.Severity < rules.Medium {
		t.Errorf("growth in the window: %s %q", f.Severity, f.Summary)
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
			job := make([]byte, 32<<10) // 32 MiB held in all: twice the tiny-heap floor, beyond the profile's sampling noise
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
	if f.Severity != rules.Low || !strings.Contains(f.Summary, "work in flight, not a leak") {
		t.Errorf("severity %s summary %q", f.Severity, f.Summary)
	}
}

var backlog [][]byte

func TestSeriesThatDrainsIsBacklog(t *testing.T) {
	before := heap(t)
	for range 12000 {
		backlog = append(backlog, make([]byte, 8<<10))
	}
	peak := heap(t)
	backlog = backlog[:3000:3000] // most of it served
	backlog = append([][]byte(nil), backlog...)
	f := one(t, evidenceOf(before, peak, heap(t)))
	backlog = nil
	if f.Severity != rules.Low || !strings.Contains(f.Fix, "drains") {
		t.Errorf("severity %s fix %q", f.Severity, f.Fix)
	}
}

func TestNeedsTwoHeaps(t *testing.T) {
	ev := evidence.NewBuilder("test").Evidence()
	ev.Profiles[evidence.Heap] = heap(t)
	res := rules.Run(facts.New(ev), []*rules.Rule{Rule})
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
	res := rules.Run(facts.New(evidenceOf(start, end)), []*rules.Rule{Rule})
	if len(res.Findings) != 0 {
		t.Errorf("finding on the profiler's own allocations: %+v", res.Findings[0])
	}
}

// A short trace's goroutine counts are instants: the jitter of short-lived
// goroutines must not read as a trend once scaled to the window.
func TestTraceCountsDoNotJudgeTheWindow(t *testing.T) {
	// 25 → 30 over a 1 s trace says nothing of the window before it.
	g := goroutines{start: 25, end: 30, span: time.Second}
	if g.tracks() || g.flat() {
		t.Errorf("tracks %v flat %v from a trace, want neither", g.tracks(), g.flat())
	}
	g = goroutines{start: 100, end: 1100, wholeWindow: true}
	if !g.tracks() || g.flat() {
		t.Errorf("tracks %v flat %v, want tracks", g.tracks(), g.flat())
	}
	g = goroutines{start: 100, end: 105, wholeWindow: true}
	if g.tracks() || !g.flat() {
		t.Errorf("tracks %v flat %v, want flat", g.tracks(), g.flat())
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
		res := rules.Run(facts.New(ev), []*rules.Rule{Rule})
		if got := len(res.Findings) == 1; got != tc.fires {
			t.Errorf("%s: fired=%v, want %v", tc.name, got, tc.fires)
		}
	}
}

func TestTinyHeapHighGCRateIsAtMostLow(t *testing.T) {
	start := runtimeMetrics()
	series, rate := tinyHeapSeries(t)
	end := runtimeMetrics()
	lo, hi := series[0], series[0]
	for _, p := range series {
		if inuse(p) < inuse(lo) {
			lo = p
		}
		if inuse(p) > inuse(hi) {
			hi = p
		}
	}
	t.Logf("GC %.0f/s, in-use %s .. %s", rate, human.Bytes(uint64(inuse(lo))), human.Bytes(uint64(inuse(hi))))
	// The worst pair a curl of two snapshots could catch: the smallest, then the largest.
	ev := evidenceOf(lo, hi)
	ev.MetricsStart, ev.MetricsEnd = start, end
	for _, f := range rules.Run(facts.New(ev), []*rules.Rule{Rule}).Findings {
		if f.Severity > rules.Low {
			t.Errorf("a healthy tiny heap at %.0f GC/s: %s %s", rate, f.Severity, f.Summary)
		}
	}
	// A few MiB over a tiny heap (the 1 MiB -> 5.2 MiB) is never reported.
	few := evidenceOf(heapOf(map[string]int64{"main.handle": 1 << 20}), heapOf(map[string]int64{"main.handle": 5<<20 + 200<<10}))
	if res := rules.Run(facts.New(few), []*rules.Rule{Rule}); len(res.Findings) != 0 {
		t.Errorf("1 MiB -> 5.2 MiB reported: %+v", res.Findings[0])
	}
}

// A query engine's buffers (prometheus): 60 MB before, 548 MB under the
// queries, 70 MB once they ended.
func TestHeapThatReturnsIsWorkInFlight(t *testing.T) {
	const site = "github.com/prometheus/prometheus/promql.(*evaluator).eval"
	f := one(t, evidenceOf(heapOf(map[string]int64{site: 60 << 20}), heapOf(map[string]int64{site: 548 << 20}), heapOf(map[string]int64{site: 70 << 20})))
	if f.Severity != rules.Low || !strings.Contains(f.Summary, "work in flight, not a leak") || !strings.Contains(f.Fix, "fell back") {
		t.Errorf("severity %s summary %q fix %q", f.Severity, f.Summary, f.Fix)
	}
	// The same growth still rising at the last snapshot is a leak.
	g := one(t, evidenceOf(heapOf(map[string]int64{site: 60 << 20}), heapOf(map[string]int64{site: 300 << 20}), heapOf(map[string]int64{site: 548 << 20})))
	if g.Severity != rules.High || !strings.Contains(g.Summary, "leak") {
		t.Errorf("steady growth: severity %s summary %q", g.Severity, g.Summary)
	}
}

// A server with ~50 goroutines and a 1 s trace at the end of a 30 s
// window: no count at the window's start is made up from it.
func TestNoGoroutineCountInventedFromTheTrace(t *testing.T) {
	first := heapOf(map[string]int64{"main.handle": 40 << 20})
	first.TimeNanos = time.Now().Add(-30 * time.Second).UnixNano()
	last := heapOf(map[string]int64{"main.handle": 90 << 20})
	last.TimeNanos = time.Now().UnixNano()
	ev := evidenceOf(first, last)
	ev.TraceSummary = &trace.Summary{Window: time.Second, Goroutines: trace.Goroutines{AtStart: 48, AtEnd: 52}}
	f := one(t, ev)
	var start, traceStart string
	for _, e := range f.Evidence {
		switch {
		case e.Name == "goroutines at start":
			t.Errorf("a goroutine count at the window's start from a 1 s trace: %s", e.Value)
		case e.Name == "goroutines at the window's start":
			start = e.Value
		case strings.HasPrefix(e.Name, "goroutines at the trace's start"):
			traceStart = e.Value
		}
	}
	if !strings.HasPrefix(start, "not known") || traceStart != "48" {
		t.Errorf("window start %q, trace start %q", start, traceStart)
	}
	if strings.Contains(f.Summary, "looks like a leak") || f.Severity > rules.Medium {
		t.Errorf("a 1 s trace judged the window: %s %s", f.Severity, f.Summary)
	}
}
