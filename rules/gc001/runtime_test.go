package gc001

import (
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

func metricsAt(at time.Time, gc, total, live float64) *bundle.RuntimeStats {
	return &bundle.RuntimeStats{Time: at, Source: "test", Runtime: &bundle.RuntimeMetrics{Time: at, Values: map[string]float64{
		evidence.MetricGCCPU: gc, evidence.MetricTotalCPU: total, evidence.MetricIdleCPU: 0, evidence.MetricHeapLive: live,
	}}}
}

// With runtime/metrics at both ends, the GC share is the runtime's own
// accounting, not the profile's estimate, and the live heap is exact.
func TestUsesExactShareFromRuntimeMetrics(t *testing.T) {
	cpu := testprof.Build(
		testprof.Stack{Value: 60, Funcs: []string{"runtime.gcBgMarkWorker"}},
		testprof.Stack{Value: 940, Funcs: []string{"main.work"}},
	) // 6% of samples: low on its own
	ev := testprof.Evidence(map[evidence.Kind]*profile.Profile{evidence.CPU: cpu})
	t0 := time.Now()
	ev.MetricsStart = metricsAt(t0, 100, 1000, 30<<20)
	ev.MetricsEnd = metricsAt(t0.Add(10*time.Second), 106, 1020, 32<<20) // 6 s of GC in 20 s used: 30%
	res := rules.Run(facts.New(ev), []*rules.Rule{Rule})
	if len(res.Findings) != 1 {
		t.Fatalf("findings %d, not checked %v", len(res.Findings), res.NotChecked)
	}
	f := res.Findings[0]
	if f.Severity != rules.High || f.Impact < 0.29 || f.Impact > 0.31 || !strings.Contains(f.ImpactBasis, "runtime/metrics") {
		t.Errorf("severity %s impact %.3f basis %q", f.Severity, f.Impact, f.ImpactBasis)
	}
	found := false
	for _, e := range f.Evidence {
		if e.Name == "live heap" && e.Num == 32<<20 {
			found = true
		}
	}
	if !found {
		t.Errorf("live heap from /gc/heap/live:bytes missing: %+v", f.Evidence)
	}
}
