package jvm018

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/perfdoctor/perfdoctor/facts"
	"github.com/perfdoctor/perfdoctor/rules/ruletest"

	"github.com/google/pprof/profile"

	"github.com/perfdoctor/perfdoctor/evidence"
	"github.com/perfdoctor/perfdoctor/formats/jfr"
	"github.com/perfdoctor/perfdoctor/internal/testprof"
	"github.com/perfdoctor/perfdoctor/rules"
)

// GCHeavy.java: G1 on JDK 17 in a 128 MB heap whose live set churns.
func TestFiresOnGCHeavy(t *testing.T) {
	res := rules.Run(facts.New(testprof.JVMRecording(t, "gcheavy-jdk17.jfr")), []*rules.Rule{Rule})
	if len(res.Findings) != 1 {
		t.Fatalf("want one finding, got %+v", res)
	}
	f := res.Findings[0]
	if f.Severity != rules.High || f.Impact < 0.5 || f.Resource != "cpu" || !strings.Contains(f.Summary, "of the JVM's CPU") {
		t.Errorf("severity %s impact %.2f summary %q", f.Severity, f.Impact, f.Summary)
	}
	if len(f.Locations) == 0 || !strings.HasPrefix(f.Locations[0].Function, "GCHeavy.") {
		t.Errorf("locations %+v, want GCHeavy's allocation sites", f.Locations)
	}
}

// Healthy.java: G1 on JDK 17 and 25, ZGC on JDK 25.
func TestSilentOnHealthy(t *testing.T) {
	for _, name := range []string{"healthy-jdk17.jfr", "healthy-jdk25.jfr", "healthy-zgc-jdk25.jfr"} {
		if res := rules.Run(facts.New(testprof.JVMRecording(t, name)), []*rules.Rule{Rule}); len(res.Findings) != 0 {
			t.Errorf("%s: %+v", name, res.Findings)
		}
	}
}

// An async-profiler CPU profile sees the GC threads: their samples are the
// measure, with or without jdk.CPULoad, and the finding claims them.
func TestProfiledGCFrames(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	cpu := testprof.Build(
		testprof.Stack{Value: 300, Funcs: []string{"G1ParScanThreadState::trim_queue_partially", "G1ParEvacuateFollowersClosure::do_void", "WorkerThread::run"}},
		testprof.Stack{Value: 700, Funcs: []string{"com.acme.Handler.handle", "java.lang.Thread.run"}},
	)
	ev := testprof.Evidence(map[evidence.Kind]*profile.Profile{evidence.CPU: cpu})
	ev.JVM = &jfr.Summary{Start: t0, End: t0.Add(10 * time.Second), HWThreads: 2,
		GC: jfr.GC{Young: "G1New", Old: "G1Old", Collections: 50, CPU: time.Second, CPUCollections: 50}}
	res := rules.Run(facts.New(ev), []*rules.Rule{Rule})
	if len(res.Findings) != 1 {
		t.Fatalf("want one finding, got %+v", res)
	}
	f := res.Findings[0]
	// The collector's 30%, as the engine estimates a fix that states no
	// range of its own.
	if f.Impact != rules.Estimated(0.3) || f.Cost == nil || f.Cost.CPUOwned != 0.3 || len(f.Frames) == 0 {
		t.Errorf("impact %.2f cost %+v frames %v", f.Impact, f.Cost, f.Frames)
	}
}

// Too little CPU to judge a share: not checked rather than silent.
func TestSkipsIdleJVM(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ev := evidence.NewBuilder("test").Evidence()
	ev.JVM = &jfr.Summary{Start: t0, End: t0.Add(10 * time.Second), JVMCPU: 0.01, HWThreads: 2,
		GC: jfr.GC{CPU: 100 * time.Millisecond, CPUCollections: 3}}
	res := rules.Run(facts.New(ev), []*rules.Rule{Rule})
	if len(res.Findings) != 0 || len(res.NotChecked) != 1 {
		t.Fatalf("got %+v", res)
	}
}

// ZooKeeper at -Xmx160m over 140 MB of znodes, the lines' measurements.
// Reads (healthy: a larger heap, 0.86x the CPU per read [0.74, 1.0004]):
// marking with pauses of 3.3-3.9% of the JVM's CPU and no evacuation
// failure, graded low, as first recorded (kept here) and as re-recorded
// (the corpus). Writes (a larger heap, 0.51x the CPU per write): the same
// marking, but pauses of 11.9% and 42 evacuation failures, graded high.
func TestMarkingBesideLightPausesIsLow(t *testing.T) {
	for _, dir := range []string{"testdata/zookeeper-tight-heap-halfidle", "../../corpus/jvm-zookeeper-tight-heap-healthy/bad"} {
		ruletest.Expect(t, dir, []*rules.Rule{Rule}, `fires JVM018 low "mostly concurrent marking, its pauses light"`+"\nnever JVM018 medium")
	}
	ruletest.Expect(t, "../../corpus/jvm-zookeeper-writes-tight-heap/bad", []*rules.Rule{Rule}, `fires JVM018 high "!its pauses light"`)
}

// What starts the collector's work orders the fix. ZooKeeper's tight heap
// (the corpus's re-recording): G1's marking cycle and the remembered sets'
// rebuild hold 26% of the samples of the collector's 30%, so headroom
// leads. GCHeavy: the pauses take 81% of the JVM's CPU with no concurrent
// work left over, so allocating less leads.
func TestSplitsTheOldGenerationsCycles(t *testing.T) {
	ruletest.Expect(t, "../../corpus/jvm-zookeeper-tight-heap-healthy/bad", []*rules.Rule{Rule},
		`fires JVM018 "old generation's collection cycles (profiled tasks)" "headroom over its live set first"`)
	res := rules.Run(facts.New(testprof.JVMRecording(t, "gcheavy-jdk17.jfr")), []*rules.Rule{Rule})
	if len(res.Findings) != 1 {
		t.Fatalf("want one finding, got %+v", res)
	}
	f := res.Findings[0]
	if !strings.HasPrefix(f.Fix, "Allocate less first") || !slices.ContainsFunc(f.Evidence, func(e rules.Fact) bool {
		return strings.HasPrefix(e.Name, "young collections") && e.Num > 0.8
	}) {
		t.Errorf("GCHeavy: fix %.60q, evidence %+v", f.Fix, f.Evidence)
	}
}
