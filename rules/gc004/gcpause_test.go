package gc004

import (
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

var t0 = time.Date(2026, 11, 24, 5, 0, 0, 0, time.UTC)

// window is a 5 s window whose pause history holds the given pauses, one
// every 100 ms, plus one pause just before the window (not counted).
func window(pauses ...time.Duration) *evidence.Evidence {
	ev := testprof.Evidence(map[evidence.Kind]*profile.Profile{})
	ev.MetricsStart = &bundle.RuntimeStats{Time: t0, NumGC: 10}
	end := &bundle.RuntimeStats{Time: t0.Add(5 * time.Second), NumGC: 10 + uint64(len(pauses))}
	end.Pauses = append(end.Pauses, bundle.Pause{End: uint64(t0.Add(-time.Second).UnixNano()), Ns: uint64(time.Second)})
	for i, d := range pauses {
		end.Pauses = append(end.Pauses, bundle.Pause{End: uint64(t0.Add(time.Duration(i+1) * 100 * time.Millisecond).UnixNano()), Ns: uint64(d)})
	}
	ev.MetricsEnd = end
	return ev
}

func TestLongPausesSetTheTail(t *testing.T) {
	res := rules.Run(facts.New(window(40*time.Millisecond, 300*time.Microsecond, 60*time.Millisecond, 500*time.Microsecond)), []*rules.Rule{Rule})
	if len(res.Findings) != 1 {
		t.Fatalf("100 ms of long pauses in 5 s: %+v", res)
	}
	f := res.Findings[0]
	if f.Severity != rules.Medium || f.Resource != "latency" ||
		!strings.HasPrefix(f.Summary, "GC pauses up to 60ms (2 of 10 ms or more) stop every request for 2.0% of the window") {
		t.Errorf("%s %s %q", f.Severity, f.Resource, f.Summary)
	}
}

func TestShortPausesAreSilent(t *testing.T) {
	var ps []time.Duration
	for range 40 {
		ps = append(ps, 800*time.Microsecond)
	}
	if res := rules.Run(facts.New(window(ps...)), []*rules.Rule{Rule}); len(res.Findings) != 0 {
		t.Fatalf("sub-millisecond pauses reported: %+v", res.Findings[0])
	}
}

// On an oversubscribed host the pauses are the host's doing: at most low,
// and the report says so.
func TestOversubscribedHostIsNamed(t *testing.T) {
	ev := window(150*time.Millisecond, 150*time.Millisecond)
	ev.SystemStart = &bundle.SystemSnapshot{Time: t0}
	ev.SystemEnd = &bundle.SystemSnapshot{Time: t0.Add(5 * time.Second), Machine: bundle.MachineInfo{NumCPU: 2, LoadAvg: [3]float64{7.3, 6, 5}}}
	res := rules.Run(facts.New(ev), []*rules.Rule{Rule})
	if len(res.Findings) != 1 {
		t.Fatalf("300 ms of pauses: %+v", res)
	}
	if f := res.Findings[0]; f.Severity != rules.Low || !strings.Contains(f.Summary, "oversubscribed host (load average 7.3 on 2 CPUs)") {
		t.Errorf("%s %q", f.Severity, f.Summary)
	}
}

// holdoutTrace is a trace whose stop-the-world pauses waited for a
// goroutine copying a snapshot: wait of the pauses' total.
func holdoutTrace(wait, total time.Duration) *trace.Summary {
	s := &trace.Summary{CPUSamples: 400}
	s.GC.STW = trace.Dist{Count: 6, Total: total, Max: wait / 2}
	s.GC.Holdouts = []trace.Holdout{{
		Stack:  []trace.Frame{{Func: "example.com/snap.(*Store).loop", File: "/src/snap/store.go", Line: 98}},
		Entry:  "example.com/snap.(*Store).loop",
		Pauses: 2, Wait: wait, Max: wait / 2, CPUSamples: int(wait / (10 * time.Millisecond)),
	}}
	return s
}

// Pauses held by non-preemptible code name it, whatever the host's load:
// the code is the cause, and the pauses stay high.
func TestNonPreemptibleHoldoutIsTheCause(t *testing.T) {
	ev := window(150*time.Millisecond, 150*time.Millisecond)
	ev.SystemStart = &bundle.SystemSnapshot{Time: t0}
	ev.SystemEnd = &bundle.SystemSnapshot{Time: t0.Add(5 * time.Second), Machine: bundle.MachineInfo{NumCPU: 2, LoadAvg: [3]float64{7.3, 6, 5}}}
	ev.TraceSummary = holdoutTrace(60*time.Millisecond, 62*time.Millisecond)
	res := rules.Run(facts.New(ev), []*rules.Rule{Rule})
	if len(res.Findings) != 1 {
		t.Fatalf("300 ms of pauses: %+v", res)
	}
	f := res.Findings[0]
	if f.Severity != rules.High || !strings.Contains(f.Summary, "non-preemptible work in snap.(*Store).loop (store.go:98)") ||
		len(f.Locations) == 0 || f.Locations[0].Function != "example.com/snap.(*Store).loop" || !strings.Contains(f.Fix, "preemptible") {
		t.Errorf("%s %q %+v\n%s", f.Severity, f.Summary, f.Locations, f.Fix)
	}
}

// A goroutine the pauses waited for that took no CPU sample meanwhile was
// waiting for a CPU itself: on an oversubscribed host, the host is named.
func TestHoldoutWithoutCPUIsTheHost(t *testing.T) {
	ev := window(150*time.Millisecond, 150*time.Millisecond)
	ev.SystemStart = &bundle.SystemSnapshot{Time: t0}
	ev.SystemEnd = &bundle.SystemSnapshot{Time: t0.Add(5 * time.Second), Machine: bundle.MachineInfo{NumCPU: 2, LoadAvg: [3]float64{7.3, 6, 5}}}
	ev.TraceSummary = holdoutTrace(60*time.Millisecond, 62*time.Millisecond)
	ev.TraceSummary.GC.Holdouts[0].CPUSamples = 0
	res := rules.Run(facts.New(ev), []*rules.Rule{Rule})
	if len(res.Findings) != 1 {
		t.Fatalf("300 ms of pauses: %+v", res)
	}
	if f := res.Findings[0]; f.Severity != rules.Low || strings.Contains(f.Summary, "non-preemptible") || !strings.Contains(f.Summary, "oversubscribed host") {
		t.Errorf("%s %q", f.Severity, f.Summary)
	}
}

// longRunTrace is a 1 s trace that caught no long pause while a goroutine
// ran four snapshot copies of longest max, taking samples CPU samples, at
// the trace's 100 samples a second of running time.
func longRunTrace(longest time.Duration, samples int) *trace.Summary {
	s := &trace.Summary{CPUSamples: 120, Running: 1200 * time.Millisecond}
	s.GC.STW = trace.Dist{Count: 30, Total: 17 * time.Millisecond, Max: 6 * time.Millisecond}
	s.GC.LongRuns = []trace.LongRun{{
		Stack: []trace.Frame{{Func: "example.com/snap.(*Store).loop", File: "/src/snap/store.go", Line: 98}},
		Runs:  4, Total: 4 * longest, Max: longest, CPUSamples: samples,
	}}
	return s
}

// A trace that caught no long pause but saw a goroutine run 70 ms at a
// time without yielding, on a CPU all along, names that code as the cause
// of the window's long pauses, even on an oversubscribed host (casebook
// L4 on a busy machine).
func TestLongRunWithoutYieldingIsTheCause(t *testing.T) {
	ev := window(150*time.Millisecond, 150*time.Millisecond)
	ev.SystemStart = &bundle.SystemSnapshot{Time: t0}
	ev.SystemEnd = &bundle.SystemSnapshot{Time: t0.Add(5 * time.Second), Machine: bundle.MachineInfo{NumCPU: 2, LoadAvg: [3]float64{3.1, 3, 3}}}
	ev.TraceSummary = longRunTrace(70*time.Millisecond, 25)
	res := rules.Run(facts.New(ev), []*rules.Rule{Rule})
	if len(res.Findings) != 1 {
		t.Fatalf("300 ms of pauses: %+v", res)
	}
	f := res.Findings[0]
	if f.Severity != rules.High || !strings.Contains(f.Summary, "non-preemptible work in snap.(*Store).loop (store.go:98)") ||
		!hasFact(f, "longest run without yielding (the runtime asks after 10 ms)") || len(f.Caveats) < 2 {
		t.Errorf("%s %q %+v", f.Severity, f.Summary, f.Evidence)
	}
}

// Long runs that took few CPU samples were threads the OS took off their
// CPUs, and runs of 20-30 ms are Go code yielding late on a busy machine:
// neither is named, and the oversubscribed host keeps the finding low.
func TestLongRunsOffCPUOrPreemptedAreNotTheCause(t *testing.T) {
	for name, s := range map[string]*trace.Summary{
		"off CPU":   longRunTrace(70*time.Millisecond, 3),
		"preempted": longRunTrace(22*time.Millisecond, 9),
	} {
		ev := window(150*time.Millisecond, 150*time.Millisecond)
		ev.SystemStart = &bundle.SystemSnapshot{Time: t0}
		ev.SystemEnd = &bundle.SystemSnapshot{Time: t0.Add(5 * time.Second), Machine: bundle.MachineInfo{NumCPU: 2, LoadAvg: [3]float64{7.3, 6, 5}}}
		ev.TraceSummary = s
		res := rules.Run(facts.New(ev), []*rules.Rule{Rule})
		if len(res.Findings) != 1 {
			t.Fatalf("%s: %+v", name, res)
		}
		if f := res.Findings[0]; f.Severity != rules.Low || strings.Contains(f.Summary, "non-preemptible") || !strings.Contains(f.Summary, "oversubscribed host") {
			t.Errorf("%s: %s %q", name, f.Severity, f.Summary)
		}
	}
}

// A holdout that holds a small part of the trace's pause time is not the
// cause: the host is named, as without a trace.
func TestMinorHoldoutIsNotTheCause(t *testing.T) {
	ev := window(150*time.Millisecond, 150*time.Millisecond)
	ev.SystemStart = &bundle.SystemSnapshot{Time: t0}
	ev.SystemEnd = &bundle.SystemSnapshot{Time: t0.Add(5 * time.Second), Machine: bundle.MachineInfo{NumCPU: 2, LoadAvg: [3]float64{7.3, 6, 5}}}
	ev.TraceSummary = holdoutTrace(20*time.Millisecond, 300*time.Millisecond)
	res := rules.Run(facts.New(ev), []*rules.Rule{Rule})
	if len(res.Findings) != 1 {
		t.Fatalf("300 ms of pauses: %+v", res)
	}
	if f := res.Findings[0]; f.Severity != rules.Low || strings.Contains(f.Summary, "non-preemptible") {
		t.Errorf("%s %q", f.Severity, f.Summary)
	}
}

// Past 256 cycles the history covers part of the window: the share is of
// what it covers, not diluted by the time it does not see.
func TestShareOfTheCoveredHistory(t *testing.T) {
	var ps []time.Duration
	for range 38 {
		ps = append(ps, 500*time.Microsecond)
	}
	ev := window(append(ps, 60*time.Millisecond, 60*time.Millisecond)...)
	// The ring kept the pause before the window and the last ten: the
	// window's first 30 cycles were overwritten.
	kept := ev.MetricsEnd.Pauses
	ev.MetricsEnd.Pauses = kept[31:]
	res := rules.Run(facts.New(ev), []*rules.Rule{Rule})
	if len(res.Findings) != 1 {
		t.Fatalf("%+v", res)
	}
	// 120 ms in the 1.9 s the history covers (its first pause in the window
	// ended at 3.1 s): 6.3%, where the whole 5 s would say 2.4%.
	f := res.Findings[0]
	if f.Severity != rules.High || !strings.Contains(f.Summary, "for 6.3% of the window") || !hasFact(f, "window covered by the pause history (last 256 cycles)") {
		t.Errorf("%s %q %+v", f.Severity, f.Summary, f.Evidence)
	}
}

// With runtime/metrics at both ends, each phase's pauses come from the
// /sched/pauses/total/gc:seconds histogram's window delta.
func TestMetricsHistogramCountsEachPhase(t *testing.T) {
	ev := window(40*time.Millisecond, 60*time.Millisecond)
	buckets := []float64{0, 0.001, 0.01, 0.05, 0.1}
	ev.MetricsStart.Runtime = &bundle.RuntimeMetrics{Histograms: map[string]bundle.Histogram{evidence.MetricGCPauses: {Buckets: buckets, Counts: []uint64{100, 3, 1, 0}}}}
	ev.MetricsEnd.Runtime = &bundle.RuntimeMetrics{Histograms: map[string]bundle.Histogram{evidence.MetricGCPauses: {Buckets: buckets, Counts: []uint64{140, 3, 2, 1}}}}
	res := rules.Run(facts.New(ev), []*rules.Rule{Rule})
	if len(res.Findings) != 1 {
		t.Fatalf("%+v", res)
	}
	f := res.Findings[0]
	for _, fa := range f.Evidence {
		switch fa.Name {
		case "stop-the-world pauses of 10 ms or more (runtime/metrics, each phase)":
			if fa.Num != 2 {
				t.Errorf("%s = %v", fa.Name, fa.Num)
			}
		case "longest stop-the-world pause (runtime/metrics bucket)":
			if fa.Value != "100ms" {
				t.Errorf("%s = %v", fa.Name, fa.Value)
			}
		}
	}
	if !hasFact(f, "longest stop-the-world pause (runtime/metrics bucket)") {
		t.Errorf("no histogram facts: %+v", f.Evidence)
	}
}

func hasFact(f rules.Finding, name string) bool {
	for _, fa := range f.Evidence {
		if fa.Name == name {
			return true
		}
	}
	return false
}
