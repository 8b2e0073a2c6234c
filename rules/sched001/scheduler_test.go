package sched001

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/perfdoctor/perfdoctor/facts"

	"github.com/google/pprof/profile"

	"github.com/perfdoctor/perfdoctor/bundle"
	"github.com/perfdoctor/perfdoctor/evidence"
	"github.com/perfdoctor/perfdoctor/evidence/trace"
	"github.com/perfdoctor/perfdoctor/internal/testprof"
	"github.com/perfdoctor/perfdoctor/rules"
)

func cpu(schedPct int64) *profile.Profile {
	return testprof.Build(
		testprof.Stack{Value: schedPct * 10, Funcs: []string{"runtime.stealWork", "runtime.findRunnable", "runtime.schedule", "runtime.park_m"}},
		testprof.Stack{Value: (100 - schedPct) * 10, Funcs: []string{"main.work"}},
	)
}

func withQuota(ev *evidence.Evidence, quota float64, env map[string]string) *evidence.Evidence {
	ev.SystemEnd = &bundle.SystemSnapshot{
		Machine: bundle.MachineInfo{NumCPU: 64},
		Process: &bundle.ProcessInfo{PID: 1, GoVersion: "go1.22.3", GoEnv: env},
		Cgroup:  &bundle.CgroupInfo{Version: 2, CPUQuotaCores: quota},
	}
	return ev
}

func TestFiresOnSchedulerShare(t *testing.T) {
	res := rules.Run(facts.New(testprof.Evidence(map[evidence.Kind]*profile.Profile{evidence.CPU: cpu(22)})), []*rules.Rule{Rule})
	if len(res.Findings) != 1 || res.Findings[0].Severity != rules.Medium {
		t.Fatalf("22%% scheduler share: %+v", res.Findings)
	}
}

func TestSilentOnNormalScheduling(t *testing.T) {
	res := rules.Run(facts.New(testprof.Evidence(map[evidence.Kind]*profile.Profile{evidence.CPU: cpu(3)})), []*rules.Rule{Rule})
	if len(res.Findings) != 0 {
		t.Fatalf("3%% scheduler share reported: %+v", res.Findings[0])
	}
}

func TestNoConfigFixWithoutOversubscription(t *testing.T) {
	ev := withQuota(testprof.Evidence(map[evidence.Kind]*profile.Profile{evidence.CPU: cpu(25)}), 64, nil)
	res := rules.Run(facts.New(ev), []*rules.Rule{Rule})
	if len(res.Findings) != 1 || res.Findings[0].Config != nil {
		t.Fatalf("GOMAXPROCS within the quota: want a finding with no config fix, got %+v", res.Findings)
	}
}

func TestGOMAXPROCSAboveQuota(t *testing.T) {
	// Case A3: Go before 1.25 saw the host's 64 cores in a 7-core pod.
	ev := withQuota(testprof.Evidence(map[evidence.Kind]*profile.Profile{evidence.CPU: cpu(15)}), 7, nil)
	res := rules.Run(facts.New(ev), []*rules.Rule{Rule})
	if len(res.Findings) != 1 {
		t.Fatal("no finding")
	}
	f := res.Findings[0]
	if f.Severity != rules.High || !strings.Contains(f.Fix, "GOMAXPROCS=7") || !strings.Contains(f.Summary, "GOMAXPROCS=64") {
		t.Errorf("got %s: %q / %q", f.Severity, f.Summary, f.Fix)
	}
	if f.Config == nil || f.Config.String() != "GOMAXPROCS=7" || f.Config.Changes[0].Now != "64" || f.Config.Gain <= 0 || f.Config.Gain > f.Impact {
		t.Errorf("config fix = %+v, want GOMAXPROCS=7 (now 64) with a gain within the impact %.2f", f.Config, f.Impact)
	}
}

func TestModernGoFollowsQuota(t *testing.T) {
	ev := withQuota(testprof.Evidence(map[evidence.Kind]*profile.Profile{evidence.CPU: cpu(3)}), 7, nil)
	ev.SystemEnd.Process.GoVersion = "go1.26.8"
	if res := rules.Run(facts.New(ev), []*rules.Rule{Rule}); len(res.Findings) != 0 {
		t.Fatalf("Go 1.26 follows the quota by itself, yet: %+v", res.Findings[0])
	}
	// ...unless GOMAXPROCS is forced in the environment.
	ev = withQuota(testprof.Evidence(map[evidence.Kind]*profile.Profile{evidence.CPU: cpu(3)}), 7, map[string]string{"GOMAXPROCS": "32"})
	ev.SystemEnd.Process.GoVersion = "go1.26.8"
	if res := rules.Run(facts.New(ev), []*rules.Rule{Rule}); len(res.Findings) != 1 {
		t.Fatal("GOMAXPROCS=32 over a 7-core quota not reported")
	}
}

func TestGOMAXPROCSAboveTheCPUsWithoutQuota(t *testing.T) {
	// Case A3 on a machine without a quota: GOMAXPROCS=256 forced on 2 CPUs.
	ev := testprof.Evidence(map[evidence.Kind]*profile.Profile{evidence.CPU: cpu(25)})
	ev.SystemEnd = &bundle.SystemSnapshot{
		Machine: bundle.MachineInfo{NumCPU: 2},
		Process: &bundle.ProcessInfo{PID: 1, GoVersion: "go1.26.8", CPUsAllowed: 2, GoEnv: map[string]string{"GOMAXPROCS": "256"}},
	}
	res := rules.Run(facts.New(ev), []*rules.Rule{Rule})
	if len(res.Findings) != 1 || res.Findings[0].Severity != rules.High || !strings.Contains(res.Findings[0].Summary, "2 CPUs") {
		t.Fatalf("got %+v", res.Findings)
	}
}

func TestHealthyConcurrencyBandIsLow(t *testing.T) {
	// Healthy services under load with GOMAXPROCS matching their CPUs
	// measured up to 9% in the scheduler (casebook A3 fixed) and 12-13%
	// when saturated by a load generator on the same two cores (E2 fixed).
	for pct, want := range map[int64]rules.Severity{9: rules.Low, 13: rules.Low, 20: rules.Medium, 30: rules.High} {
		res := rules.Run(facts.New(testprof.Evidence(map[evidence.Kind]*profile.Profile{evidence.CPU: cpu(pct)})), []*rules.Rule{Rule})
		if len(res.Findings) != 1 || res.Findings[0].Severity != want {
			t.Errorf("%d%% scheduler share: want one %s finding, got %+v", pct, want, res.Findings)
		}
	}
}

// Profiles saved by hand have no /proc snapshot, so the CPU count is
// unknown; the trace still says how many Ps there are and the CPU profile
// how much CPU they had work for (casebook R4 as a plain folder: 64 Ps for
// 0.7 cores).
func TestPsFarAboveTheWorkWithoutProc(t *testing.T) {
	ev := testprof.Evidence(map[evidence.Kind]*profile.Profile{evidence.CPU: cpu(30)}) // 1 core of work
	ev.TraceSummary = &trace.Summary{GOMAXPROCS: 64}
	res := rules.Run(facts.New(ev), []*rules.Rule{Rule})
	if len(res.Findings) != 1 || res.Findings[0].Severity != rules.High ||
		!strings.Contains(res.Findings[0].Summary, "GOMAXPROCS=64 exceeds the 1 cores the process used") ||
		res.Findings[0].Cost == nil || res.Findings[0].Cost.Level != rules.LevelConfig {
		t.Fatalf("got %+v", res.Findings)
	}
	// 4 Ps for a core of work is a healthy service between bursts.
	ev = testprof.Evidence(map[evidence.Kind]*profile.Profile{evidence.CPU: cpu(13)})
	ev.TraceSummary = &trace.Summary{GOMAXPROCS: 4}
	if res := rules.Run(facts.New(ev), []*rules.Rule{Rule}); len(res.Findings) != 1 || res.Findings[0].Severity != rules.Low || strings.Contains(res.Findings[0].Summary, "exceeds") {
		t.Fatalf("4 Ps for one core: %+v", res.Findings)
	}
}

// Go 1.26's scheduler metrics, served by the agent, join the evidence; an
// older target's threads come from /proc.
func TestReadsSchedulerStateMetrics(t *testing.T) {
	snap := func(at time.Time, values map[string]float64) *bundle.RuntimeStats {
		return &bundle.RuntimeStats{Time: at, Runtime: &bundle.RuntimeMetrics{Time: at, Values: values}}
	}
	t0 := time.Unix(1700000000, 0)
	ev := testprof.Evidence(map[evidence.Kind]*profile.Profile{evidence.CPU: cpu(15)})
	ev.MetricsStart = snap(t0, map[string]float64{evidence.MetricGoroutines: 10})
	ev.MetricsEnd = snap(t0.Add(5*time.Second), map[string]float64{
		evidence.MetricGoroutines: 40, evidence.MetricGoroutinesRunnable: 17,
		evidence.MetricGoroutinesNotInGo: 3, evidence.MetricThreads: 9,
	})
	res := rules.Run(facts.New(ev), []*rules.Rule{Rule})
	if len(res.Findings) != 1 {
		t.Fatalf("%+v", res.Findings)
	}
	got := map[string]float64{}
	for _, f := range res.Findings[0].Evidence {
		got[f.Name] = f.Num
	}
	if got["goroutines waiting for a P (runtime/metrics)"] != 17 || got["OS threads (runtime/metrics)"] != 9 || got["goroutines in system calls or cgo (runtime/metrics)"] != 3 {
		t.Errorf("evidence %+v", res.Findings[0].Evidence)
	}
	// Without them (an older Go, or no agent), /proc's thread count.
	ev = withQuota(testprof.Evidence(map[evidence.Kind]*profile.Profile{evidence.CPU: cpu(15)}), 0, nil)
	ev.SystemEnd.Process.Threads = 12
	res = rules.Run(facts.New(ev), []*rules.Rule{Rule})
	if len(res.Findings) != 1 || !slices.ContainsFunc(res.Findings[0].Evidence, func(f rules.Fact) bool { return f.Name == "OS threads (/proc)" && f.Num == 12 }) {
		t.Errorf("older target: %+v", res.Findings)
	}
}

// TestQuotaBelowTwoCPUsPrescribesTwo: like Go's own default since 1.25, a
// quota under 2 cores gets GOMAXPROCS=2, and GOMAXPROCS=2 under it is no
// oversubscription to fix.
func TestQuotaBelowTwoCPUsPrescribesTwo(t *testing.T) {
	ev := withQuota(testprof.Evidence(map[evidence.Kind]*profile.Profile{evidence.CPU: cpu(15)}), 1, map[string]string{"GOMAXPROCS": "256"})
	res := rules.Run(facts.New(ev), []*rules.Rule{Rule})
	if len(res.Findings) != 1 || res.Findings[0].Config == nil || res.Findings[0].Config.String() != "GOMAXPROCS=2" {
		t.Fatalf("GOMAXPROCS=256 on a 1-core quota: %+v", res.Findings)
	}
	ev = withQuota(testprof.Evidence(map[evidence.Kind]*profile.Profile{evidence.CPU: cpu(15)}), 1, map[string]string{"GOMAXPROCS": "2"})
	if res := rules.Run(facts.New(ev), []*rules.Rule{Rule}); len(res.Findings) == 1 && res.Findings[0].Config != nil {
		t.Errorf("GOMAXPROCS=2 on a 1-core quota is Go's own default, yet: %s", res.Findings[0].Summary)
	}
}
