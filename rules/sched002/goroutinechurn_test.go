package sched002

import (
	"hash/fnv"
	"os"
	"path/filepath"
	rtrace "runtime/trace"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/perfdoctor/perfdoctor/facts"
	"github.com/perfdoctor/perfdoctor/rules/ruletest"

	"github.com/google/pprof/profile"

	"github.com/perfdoctor/perfdoctor/bundle"
	"github.com/perfdoctor/perfdoctor/evidence"
	"github.com/perfdoctor/perfdoctor/evidence/trace"
	"github.com/perfdoctor/perfdoctor/facts/frames"
	"github.com/perfdoctor/perfdoctor/internal/testprof"
	"github.com/perfdoctor/perfdoctor/rules"
)

const items = 64

var sums [items]uint64

// item is a small piece of work, like one rate-limit counter update.
func item(i int) {
	h := fnv.New64a()
	var b [64]byte
	b[0] = byte(i)
	_, _ = h.Write(b[:])
	sums[i] = h.Sum64()
}

// fanOut is case B1's shape: a goroutine per item of every request.
func fanOut() {
	var wg sync.WaitGroup
	for i := range items {
		wg.Add(1)
		go func() {
			defer wg.Done()
			item(i)
		}()
	}
	wg.Wait()
}

// pool hands each request's items to two long-lived workers.
type pool struct{ jobs chan job }

type job struct {
	i    int
	done *sync.WaitGroup
}

func newPool(workers int) *pool {
	p := &pool{jobs: make(chan job, items)}
	for range workers {
		go func() {
			for j := range p.jobs {
				item(j.i)
				j.done.Done()
			}
		}()
	}
	return p
}

func (p *pool) request() {
	var wg sync.WaitGroup
	wg.Add(items)
	for i := range items {
		p.jobs <- job{i, &wg}
	}
	wg.Wait()
}

// traced records a short execution trace of work into a file.
func traced(t *testing.T, d time.Duration, work func()) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "trace.out")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := rtrace.Start(f); err != nil {
		t.Fatal(err)
	}
	for end := time.Now().Add(d); time.Now().Before(end); {
		work()
	}
	rtrace.Stop()
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestFiresOnGoroutinePerItem(t *testing.T) {
	ev := testprof.WithTrace(t, testprof.Evidence(map[evidence.Kind]*profile.Profile{evidence.CPU: testprof.CPU(t, 1500*time.Millisecond, 2, fanOut)}),
		traced(t, 100*time.Millisecond, fanOut))
	res := rules.Run(facts.New(ev), []*rules.Rule{Rule})
	if len(res.Findings) != 1 {
		t.Fatalf("want one goroutine-churn finding, got %d (not checked %v)", len(res.Findings), res.NotChecked)
	}
	f := res.Findings[0]
	if f.Class != "goroutine-churn" || f.Impact <= 0 {
		t.Errorf("finding %s impact %v", f.Class, f.Impact)
	}
	if len(f.Locations) == 0 || !strings.HasSuffix(f.Locations[0].Function, "sched002.fanOut") ||
		!strings.HasSuffix(f.Locations[0].File, "goroutinechurn_test.go") || f.Locations[0].Share < 0.9 {
		t.Fatalf("locations %+v, want the go statement in fanOut", f.Locations)
	}
	if !strings.Contains(f.Summary, "goroutines/s") || !strings.Contains(f.Fix, "fanOut (goroutinechurn_test.go:") || !strings.Contains(f.Fix, "sched002.fanOut.func1") {
		t.Errorf("summary %q\nfix %q", f.Summary, f.Fix)
	}
}

func TestSilentOnWorkerPool(t *testing.T) {
	p := newPool(2)
	defer close(p.jobs)
	ev := testprof.WithTrace(t, testprof.Evidence(map[evidence.Kind]*profile.Profile{evidence.CPU: testprof.CPU(t, 1500*time.Millisecond, 2, p.request)}),
		traced(t, 100*time.Millisecond, p.request))
	res := rules.Run(facts.New(ev), []*rules.Rule{Rule})
	if len(res.Findings) != 0 {
		t.Fatalf("a worker pool got %+v", res.Findings[0])
	}
}

// cpuOf is a synthetic CPU profile: percentages of creation/exit, scheduler
// and work, creation called from creator.
func cpuOf(churn, sched int64, creator string) *profile.Profile {
	return testprof.Build(
		testprof.Stack{Value: churn * 5, Funcs: []string{"runtime.newproc1", "runtime.systemstack", "runtime.newproc", creator, "main.handler"}},
		testprof.Stack{Value: churn * 5, Funcs: []string{"runtime.gfput", "runtime.goexit0", "runtime.mcall"}},
		testprof.Stack{Value: sched * 10, Funcs: []string{"runtime.findRunnable", "runtime.schedule"}},
		testprof.Stack{Value: (100 - churn - sched) * 10, Funcs: []string{"main.work", "main.handler"}},
	)
}

func summaryOf(createdPerSec float64, p99 time.Duration, creator string) *trace.Summary {
	n := int(createdPerSec)
	return &trace.Summary{
		Window:       time.Second,
		SchedLatency: trace.Dist{Count: 5000, P99: p99, Max: p99},
		Blocked:      map[trace.Reason]time.Duration{trace.ReasonSync: 3 * time.Second},
		Goroutines: trace.Goroutines{
			Created: n, CreatedPerSec: createdPerSec, Ended: n, Max: 400,
			Lifetime: trace.Dist{Count: int64(n), P50: 20 * time.Millisecond, P90: 200 * time.Millisecond},
			Sites: []trace.Site{{
				Stack:   []trace.Frame{{Func: creator, File: "/src/limiter.go", Line: 88}, {Func: "main.handler", File: "/src/main.go", Line: 12}},
				Entry:   "main.writeRedis",
				Created: n, Ended: n, Life: time.Duration(n) * 20 * time.Millisecond, Running: time.Duration(n) * 50 * time.Microsecond,
			}},
		},
	}
}

func TestCountsAndCostsBothNeeded(t *testing.T) {
	for _, tc := range []struct {
		name         string
		churn, sched int64
		created      float64
		p99          time.Duration
		creator      string
		fires        bool
		want         rules.Severity
	}{
		// Case A5: few, cheap goroutines: a pool gains nothing.
		{"few and cheap", 1, 2, 50, time.Millisecond, "main.(*Limiter).Record", false, 0},
		// Many, but cheap and not delaying anyone.
		{"many but cheap", 1, 2, 5000, time.Millisecond, "main.(*Limiter).Record", false, 0},
		// Costly scheduling, but goroutines are few: SCHED001's business.
		{"few but scheduler-heavy", 1, 9, 100, 20 * time.Millisecond, "main.(*Limiter).Record", false, 0},
		// Case B1: ~10 goroutines per request, queueing behind each other.
		{"case B1", 2, 4, 2000, 40 * time.Millisecond, "main.(*Limiter).Record", true, rules.Medium},
		{"churn alone is both count and cost", 4, 2, 0, 0, "main.(*Limiter).Record", true, rules.Low},
		{"heavy churn", 15, 12, 50000, time.Millisecond, "main.(*Limiter).Record", true, rules.High},
		// The HTTP server's per-connection goroutines are not the service's to pool.
		{"server accept loop", 4, 4, 3000, 20 * time.Millisecond, "net/http.(*Server).Serve", false, 0},
	} {
		ev := testprof.Evidence(map[evidence.Kind]*profile.Profile{evidence.CPU: cpuOf(tc.churn, tc.sched, tc.creator)})
		if tc.created > 0 {
			ev.TraceSummary = summaryOf(tc.created, tc.p99, tc.creator)
		}
		res := rules.Run(facts.New(ev), []*rules.Rule{Rule})
		if got := len(res.Findings) == 1; got != tc.fires {
			t.Errorf("%s: fired=%v, want %v", tc.name, got, tc.fires)
			continue
		}
		if !tc.fires {
			continue
		}
		f := res.Findings[0]
		if f.Severity != tc.want {
			t.Errorf("%s: severity %s, want %s", tc.name, f.Severity, tc.want)
		}
		if len(f.Locations) == 0 || f.Locations[0].Function != tc.creator {
			t.Errorf("%s: locations %+v", tc.name, f.Locations)
		}
	}
}

func TestCPUAloneNamesTheGoStatement(t *testing.T) {
	ev := testprof.Evidence(map[evidence.Kind]*profile.Profile{evidence.CPU: cpuOf(6, 3, "main.(*Limiter).Record")})
	res := rules.Run(facts.New(ev), []*rules.Rule{Rule})
	if len(res.Findings) != 1 {
		t.Fatal("no finding")
	}
	f := res.Findings[0]
	if f.Locations[0].Function != "main.(*Limiter).Record" || !strings.Contains(f.Locations[0].Role, "CPU") {
		t.Errorf("location %+v", f.Locations[0])
	}
	if !strings.Contains(strings.Join(f.Caveats, " "), "No execution trace") {
		t.Errorf("caveats %v", f.Caveats)
	}
}

func TestWrappersAreSkipped(t *testing.T) {
	fr, ok := goSite([]trace.Frame{
		{Func: "golang.org/x/sync/errgroup.(*Group).Go"},
		{Func: "main.fetchAll", File: "/src/fetch.go", Line: 30},
	})
	if !ok || fr.Func != "main.fetchAll" {
		t.Errorf("go site = %+v", fr)
	}
	for _, fn := range []string{"runtime.newproc1", "runtime.goexit0", "runtime.gfget"} {
		if !frames.ChurnFrames(fn) {
			t.Errorf("%s not counted as churn", fn)
		}
	}
	if frames.ChurnFrames("runtime.goexit") {
		t.Error("runtime.goexit is the root of every stack, not churn")
	}
}

// TestShortGoroutinesOwnWorkCounts: the CPU goroutines that run briefly
// each spend in hand-offs and system calls (per-item overhead a batching
// pool amortises) adds its share to the estimate; their computation, and
// long-running goroutines' work, would only move to a pool.
func TestShortGoroutinesOwnWorkCounts(t *testing.T) {
	for _, tc := range []struct {
		name    string
		running time.Duration // per goroutine
		impact  float64
	}{
		// Counting the short goroutines' own work reads beyond the
		// samples the finding owns, so the engine adds nothing to it; the
		// churn's own share is estimated as the engine estimates a fix
		// that states no range of its own.
		{"short: 50µs each", 50 * time.Microsecond, 0.04 + 0.02 + 0.30},
		{"long: 5ms each", 5 * time.Millisecond, rules.Estimated(0.04 + 0.02)},
	} {
		cpu := testprof.Build(
			testprof.Stack{Value: 20, Funcs: []string{"runtime.newproc1", "runtime.newproc", "main.(*Limiter).Record", "main.handler"}},
			testprof.Stack{Value: 20, Funcs: []string{"runtime.gfput", "runtime.goexit0", "runtime.mcall"}},
			testprof.Stack{Value: 40, Funcs: []string{"runtime.findRunnable", "runtime.schedule"}},
			testprof.Stack{Value: 300, Funcs: []string{"syscall.Syscall", "net.(*conn).Write", "main.writeRedis", "runtime.goexit"}},
			testprof.Stack{Value: 100, Funcs: []string{"main.hashKey", "main.writeRedis", "runtime.goexit"}},
			testprof.Stack{Value: 520, Funcs: []string{"main.work", "main.handler", "runtime.goexit"}},
		)
		ev := testprof.Evidence(map[evidence.Kind]*profile.Profile{evidence.CPU: cpu})
		ev.TraceSummary = summaryOf(20000, time.Millisecond, "main.(*Limiter).Record")
		site := &ev.TraceSummary.Goroutines.Sites[0]
		site.Running = time.Duration(site.Created) * tc.running
		res := rules.Run(facts.New(ev), []*rules.Rule{Rule})
		if len(res.Findings) != 1 {
			t.Fatalf("%s: %d findings", tc.name, len(res.Findings))
		}
		if got := res.Findings[0].Impact; got < tc.impact-0.005 || got > tc.impact+0.005 {
			t.Errorf("%s: impact %.3f, want %.3f", tc.name, got, tc.impact)
		}
	}
}

// Without a trace, Go 1.26's /sched/goroutines-created (served by the
// agent) gives the creation rate over the whole window: 2 000 a second
// with creation and scheduling at 6% of CPU is enough.
func TestCreationRateFromRuntimeMetrics(t *testing.T) {
	t0 := time.Unix(1700000000, 0)
	snap := func(at time.Time, made float64) *bundle.RuntimeStats {
		return &bundle.RuntimeStats{Time: at, Runtime: &bundle.RuntimeMetrics{Time: at, Values: map[string]float64{evidence.MetricGoroutinesMade: made}}}
	}
	ev := testprof.Evidence(map[evidence.Kind]*profile.Profile{evidence.CPU: cpuOf(2, 4, "main.limit")})
	if res := rules.Run(facts.New(ev), []*rules.Rule{Rule}); len(res.Findings) != 0 {
		t.Fatalf("no creation rate known: %+v", res.Findings)
	}
	ev.MetricsStart, ev.MetricsEnd = snap(t0, 1000), snap(t0.Add(5*time.Second), 11000)
	res := rules.Run(facts.New(ev), []*rules.Rule{Rule})
	if len(res.Findings) != 1 {
		t.Fatalf("2000 goroutines/s from runtime/metrics: %+v", res.Findings)
	}
	found := false
	for _, f := range res.Findings[0].Evidence {
		found = found || (f.Name == "goroutines created per second (runtime/metrics)" && f.Num == 2000)
	}
	if !found || !strings.Contains(res.Findings[0].Summary, "2000 goroutines/s") {
		t.Errorf("%s %+v", res.Findings[0].Summary, res.Findings[0].Evidence)
	}
}

// CoreDNS (corpus, forwarding every query): miekg/dns starts a goroutine
// per UDP packet, as net/http does per connection; that is the server's
// design, not churn for the service to bound.
func TestDNSServerPacketGoroutinesAreNotChurn(t *testing.T) {
	ruletest.Expect(t, "../../corpus/go-coredns-forward-no-cache/bad", []*rules.Rule{Rule}, "never SCHED002")
}
