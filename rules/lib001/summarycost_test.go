package lib001

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

// Symbol names as in github.com/prometheus/client_golang v1.x summary.go and
// github.com/beorn7/perks v1.0.1 quantile/stream.go.
const (
	prom  = "github.com/prometheus/client_golang/prometheus."
	perks = "github.com/beorn7/perks/quantile."
)

var flushGoroutine = []string{
	perks + "(*Stream).flush", perks + "(*Stream).insert", perks + "(*Stream).Insert",
	prom + "(*summary).flushColdBuf", prom + "(*summary).asyncFlush.func1",
}

func observer(app ...string) []string {
	return append([]string{"sync.(*Mutex).lockSlow", "sync.(*Mutex).Lock", prom + "(*summary).Observe"}, app...)
}

func run(cpu *profile.Profile) rules.Result {
	return rules.Run(facts.New(testprof.Evidence(map[evidence.Kind]*profile.Profile{evidence.CPU: cpu})), []*rules.Rule{Rule})
}

func stack(v int64, funcs ...string) testprof.Stack { return testprof.Stack{Value: v, Funcs: funcs} }

func with(prefix []string, rest ...string) []string {
	return append(append([]string{}, prefix...), rest...)
}

// Case A2: an ad exchange spent 48.6% of CPU under asyncFlush.
func TestFiresOnSummaryFlushAndMerge(t *testing.T) {
	cpu := testprof.Build(
		stack(300, with([]string{perks + "(*stream).merge"}, flushGoroutine...)...),
		stack(150, with([]string{perks + "NewTargeted.func1", perks + "(*stream).compress", perks + "(*stream).merge"}, flushGoroutine...)...),
		stack(36, with([]string{"sort.insertionSort", "sort.pdqsort", "sort.Sort", perks + "(*Stream).maybeSort"}, flushGoroutine...)...),
		stack(40, observer("main.(*auction).recordLatency", "main.(*server).handleBid", "net/http.HandlerFunc.ServeHTTP")...),
		stack(474, "main.(*server).handleBid", "net/http.HandlerFunc.ServeHTTP"),
	)
	res := run(cpu)
	if len(res.Findings) != 1 {
		t.Fatalf("want one metrics-summary-cost finding, got %d (%v)", len(res.Findings), res.NotChecked)
	}
	f := res.Findings[0]
	if f.Class != "metrics-summary-cost" || f.Severity != rules.High || f.Impact < 0.4 {
		t.Errorf("class %s severity %s impact %.3f: want high, >= 40%%", f.Class, f.Severity, f.Impact)
	}
	if len(f.Locations) == 0 || f.Locations[0].Function != "main.(*auction).recordLatency" {
		t.Errorf("locations %+v do not name the code calling Observe", f.Locations)
	}
	if !strings.Contains(f.Summary, "recordLatency") || !strings.Contains(f.Fix, "Histogram") {
		t.Errorf("summary %q / fix %q", f.Summary, f.Fix)
	}
	if len(f.Frames) == 0 || !strings.HasPrefix(f.Frames[0], perks) {
		t.Errorf("frames %v", f.Frames)
	}
}

func TestFiresOnVendoredClientAndScrape(t *testing.T) {
	v := "github.com/acme/adx/vendor/"
	cpu := testprof.Build(
		stack(60, v+perks+"(*stream).query", v+perks+"(*Stream).Query", v+prom+"(*summary).Write", v+"github.com/prometheus/client_golang/prometheus.processMetric"),
		stack(40, v+perks+"(*stream).merge", v+perks+"(*Stream).flush", v+prom+"(*summary).flushColdBuf", v+prom+"(*summary).asyncFlush.func1"),
		stack(900, "main.work"),
	)
	res := run(cpu)
	if len(res.Findings) != 1 {
		t.Fatalf("vendored client_golang not recognised: %+v", res)
	}
	if f := res.Findings[0]; f.Impact < 0.08 || f.Severity != rules.Medium {
		t.Errorf("impact %.3f severity %s, want ~9%% medium", f.Impact, f.Severity)
	}
}

func TestSilentBelowThreshold(t *testing.T) {
	cpu := testprof.Build(
		stack(15, with([]string{perks + "(*stream).merge"}, flushGoroutine...)...),
		stack(5, observer("main.record")...),
		stack(980, "main.work"),
	)
	if res := run(cpu); len(res.Findings) != 0 {
		t.Fatalf("2%% Summary share reported: %+v", res.Findings[0])
	}
}

func TestSilentOnHistogramsAndSummariesWithoutObjectives(t *testing.T) {
	cpu := testprof.Build(
		stack(100, prom+"(*histogram).findBucket", prom+"(*histogram).Observe", "main.record"),
		stack(100, "sync/atomic.AddUint64", prom+"(*noObjectivesSummary).Observe", "main.record"),
		stack(800, "main.work"),
	)
	if res := run(cpu); len(res.Findings) != 0 {
		t.Fatalf("histogram / objective-less summary reported: %+v", res.Findings[0])
	}
}

func TestTooFewSamplesIsNotChecked(t *testing.T) {
	cpu := testprof.Build(stack(50, with([]string{perks + "(*stream).merge"}, flushGoroutine...)...))
	res := run(cpu)
	if len(res.Findings) != 0 || len(res.NotChecked) != 1 {
		t.Fatalf("50 samples: findings %d, not checked %v", len(res.Findings), res.NotChecked)
	}
}

// Prometheus's own query Summary, in the program Debian installs: the
// user can trim or turn off metrics, not rewrite them, so no code example.
func TestPackagedProgramGetsConfiguration(t *testing.T) {
	const spanTimer = "github.com/prometheus/prometheus/util/stats.(*SpanTimer).Finish"
	cpu := testprof.Build(
		stack(300, with([]string{perks + "(*stream).merge"}, flushGoroutine...)...),
		stack(40, observer(spanTimer, "github.com/prometheus/prometheus/web/api/v1.(*API).queryRange")...),
		stack(660, "github.com/prometheus/prometheus/promql.(*Engine).exec"),
	)
	ev := testprof.Evidence(map[evidence.Kind]*profile.Profile{evidence.CPU: cpu})
	ev.SystemEnd = &bundle.SystemSnapshot{Time: time.Now(), Process: &bundle.ProcessInfo{
		Build: &bundle.BuildInfo{Main: "github.com/prometheus/prometheus"}, Executable: "/usr/bin/prometheus"}}
	res := rules.Run(facts.New(ev), []*rules.Rule{Rule})
	if len(res.Findings) != 1 {
		t.Fatalf("want one finding: %+v", res.Findings)
	}
	f := res.Findings[0]
	if !strings.Contains(f.Fix, "not yours to edit") || f.Example != "" {
		t.Errorf("packaged prometheus: fix %q example %q", f.Fix, f.Example)
	}
}
