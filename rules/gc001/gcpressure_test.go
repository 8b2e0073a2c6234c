package gc001

import (
	"crypto/sha256"
	"strings"
	"testing"
	"time"

	"github.com/perfdoctor/perfdoctor/facts"

	"github.com/google/pprof/profile"

	"github.com/perfdoctor/perfdoctor/bundle"
	"github.com/perfdoctor/perfdoctor/evidence"
	"github.com/perfdoctor/perfdoctor/internal/testprof"
	"github.com/perfdoctor/perfdoctor/rules"
)

type node struct {
	next *node
	name string
	vals [4]int
}

var live []*node

// churn allocates short-lived, pointer-rich objects against a live set of a
// few MB, the shape of case D1.
func churn() {
	if live == nil {
		live = make([]*node, 1<<16)
	}
	var head *node
	for i := range 512 {
		head = &node{next: head, name: strings.Repeat("x", i%32)}
	}
	live[int(time.Now().UnixNano())%len(live)] = head
}

var sum [32]byte

func compute() {
	var buf [4096]byte
	for range 64 {
		sum = sha256.Sum256(buf[:])
		buf[0] = sum[0]
	}
}

func run(t *testing.T, profiles map[evidence.Kind]*profile.Profile) rules.Result {
	t.Helper()
	return rules.Run(facts.New(testprof.Evidence(profiles)), []*rules.Rule{Rule})
}

func TestFiresOnAllocationHeavyService(t *testing.T) {
	cpu := testprof.CPU(t, 2*time.Second, 2, churn)
	allocs := testprof.Allocs(t, 200, churn)
	res := run(t, map[evidence.Kind]*profile.Profile{evidence.CPU: cpu, evidence.Allocs: allocs})
	if len(res.Findings) != 1 {
		t.Fatalf("want one gc-pressure finding, got %d (not checked: %v)", len(res.Findings), res.NotChecked)
	}
	f := res.Findings[0]
	if f.Class != "gc-pressure" || f.Impact < lowShare {
		t.Errorf("finding = %s impact %.3f, want gc-pressure >= %.2f", f.Class, f.Impact, lowShare)
	}
	if len(f.Locations) == 0 || !strings.Contains(f.Locations[0].Function, "gc001.churn") {
		t.Errorf("top allocation site = %+v, want gc001.churn", f.Locations)
	}
	if !strings.Contains(f.Fix, "GOMEMLIMIT") {
		t.Errorf("fix lacks the GOMEMLIMIT advice: %s", f.Fix)
	}
}

func TestSilentOnComputeBoundService(t *testing.T) {
	cpu := testprof.CPU(t, 2*time.Second, 2, compute)
	res := run(t, map[evidence.Kind]*profile.Profile{evidence.CPU: cpu})
	if len(res.Findings) != 0 {
		t.Fatalf("compute-only work got %+v", res.Findings[0])
	}
}

func TestSeverityThresholds(t *testing.T) {
	for _, tc := range []struct {
		gc, total int64
		want      rules.Severity
		fires     bool
	}{
		{gc: 4, total: 100, fires: false},
		{gc: 6, total: 100, want: rules.Low, fires: true},
		{gc: 21, total: 100, want: rules.Low, fires: true}, // a healthy tiny heap (R6)
		{gc: 26, total: 100, want: rules.Medium, fires: true},
		{gc: 31, total: 100, want: rules.High, fires: true},
	} {
		cpu := testprof.Build(
			testprof.Stack{Value: tc.gc * 10, Funcs: []string{"runtime.scanObject", "runtime.gcDrain", "runtime.gcBgMarkWorker"}},
			testprof.Stack{Value: (tc.total - tc.gc) * 10, Funcs: []string{"main.work", "main.main"}},
		)
		res := run(t, map[evidence.Kind]*profile.Profile{evidence.CPU: cpu})
		if got := len(res.Findings) == 1; got != tc.fires {
			t.Fatalf("gc %d%%: fired=%v, want %v", tc.gc, got, tc.fires)
		}
		if tc.fires && res.Findings[0].Severity != tc.want {
			t.Errorf("gc %d%%: severity %s, want %s", tc.gc, res.Findings[0].Severity, tc.want)
		}
	}
}

func TestTooFewSamplesIsNotChecked(t *testing.T) {
	cpu := testprof.Build(testprof.Stack{Value: 50, Funcs: []string{"runtime.gcBgMarkWorker"}})
	res := run(t, map[evidence.Kind]*profile.Profile{evidence.CPU: cpu})
	if len(res.Findings) != 0 || len(res.NotChecked) != 1 {
		t.Fatalf("findings %v, not checked %v: want only a not-checked entry", res.Findings, res.NotChecked)
	}
}

func TestUsesRuntimeStatistics(t *testing.T) {
	cpu := testprof.Build(
		testprof.Stack{Value: 300, Funcs: []string{"runtime.scanObject", "runtime.gcBgMarkWorker"}},
		testprof.Stack{Value: 700, Funcs: []string{"main.work"}},
	)
	ev := testprof.Evidence(map[evidence.Kind]*profile.Profile{evidence.CPU: cpu})
	t0 := time.Unix(1000, 0)
	ev.MetricsStart = &bundle.RuntimeStats{Time: t0, NumGC: 10, TotalAlloc: 0, Mallocs: 0, LastGC: uint64(t0.Add(-time.Second / 2).UnixNano())}
	ev.MetricsEnd = &bundle.RuntimeStats{Time: t0.Add(10 * time.Second), NumGC: 60, TotalAlloc: 5 << 30, Mallocs: 1e8,
		Pauses: []bundle.Pause{{End: uint64(t0.Add(-time.Second).UnixNano()), Ns: 9e6}, {End: uint64(t0.Add(5 * time.Second).UnixNano()), Ns: 2e6}}}
	res := rules.Run(facts.New(ev), []*rules.Rule{Rule})
	if len(res.Findings) != 1 {
		t.Fatal("no finding")
	}
	f := res.Findings[0]
	if !strings.Contains(f.Summary, "5.0 GC cycles/s") {
		t.Errorf("summary %q lacks the cycle rate", f.Summary)
	}
	for _, e := range f.Evidence {
		if e.Name == "GC pause time in window" && e.Num != 2 {
			t.Errorf("pause in window = %v ms, want 2 (the pause before the window excluded)", e.Num)
		}
	}
}

// TestQuietWindowIsNotTheServicesGCCost: an idle server's few CPU samples
// can be mostly GC while the runtime's own accounting since start says the
// GC costs next to nothing (a trial: 26% in 112 samples, 0.2% since
// start); the finding says which is which and stays low. With enough
// samples, or when the two agree, the share is the service's.
func TestQuietWindowIsNotTheServicesGCCost(t *testing.T) {
	for _, tc := range []struct {
		samples  int64
		fraction float64
		quiet    bool
	}{
		{samples: 112, fraction: 0.002, quiet: true},
		{samples: 112, fraction: 0.20, quiet: false},
		{samples: 2000, fraction: 0.002, quiet: false},
	} {
		gc := tc.samples * 32 / 100
		cpu := testprof.Build(
			testprof.Stack{Value: gc, Funcs: []string{"runtime.scanObject", "runtime.gcDrain", "runtime.gcBgMarkWorker"}},
			testprof.Stack{Value: tc.samples - gc, Funcs: []string{"main.work", "main.main"}},
		)
		cpu.DurationNanos = tc.samples * int64(10*time.Millisecond) // one core busy: the engine's cap on idle processes stays out of it
		ev := testprof.Evidence(map[evidence.Kind]*profile.Profile{evidence.CPU: cpu})
		ev.MetricsEnd = &bundle.RuntimeStats{Time: time.Unix(1000, 0), GCCPUFraction: tc.fraction}
		res := rules.Run(facts.New(ev), []*rules.Rule{Rule})
		if len(res.Findings) != 1 {
			t.Fatalf("%+v: no finding", tc)
		}
		f := res.Findings[0]
		said := strings.Contains(f.Summary, "too quiet a window")
		if said != tc.quiet || (tc.quiet && f.Severity != rules.Low) || (!tc.quiet && f.Severity != rules.High) {
			t.Errorf("%+v: %s %q", tc, f.Severity, f.Summary)
		}
	}
}
