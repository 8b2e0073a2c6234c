package gc003

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/perfdoctor/perfdoctor/facts"

	"github.com/perfdoctor/perfdoctor/evidence"
	"github.com/perfdoctor/perfdoctor/internal/testprof"
	"github.com/perfdoctor/perfdoctor/rules"
)

func withLog(t *testing.T, log string) *evidence.Evidence {
	t.Helper()
	ev, err := evidence.Load(t.Context(), evidence.LoadOptions{GCTrace: strings.NewReader(log), GCTraceName: "gc.log"})
	if err != nil {
		t.Fatal(err)
	}
	return ev
}

func realD1Bad(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile("../../formats/gctrace/testdata/d1-bad.log")
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// quiet is a healthy service: a cycle every 2 s, ~1 ms of CPU each on 4 Ps.
func quiet() string {
	var b strings.Builder
	for i := 1; i <= 20; i++ {
		fmt.Fprintf(&b, "gc %d @%d.000s 0%%: 0.02+1.0+0.01 ms clock, 0.08+0.1/0.8/1.5+0.04 ms cpu, 60->61->40 MB, 80 MB goal, 0 MB stacks, 0 MB globals, 4 P\n", i, 2*i)
	}
	return b.String()
}

func TestFiresOnRealD1BadLog(t *testing.T) {
	res := rules.Run(facts.New(withLog(t, realD1Bad(t))), []*rules.Rule{Rule})
	if len(res.Findings) != 1 {
		t.Fatalf("want one finding, got %d (not checked: %v)", len(res.Findings), res.NotChecked)
	}
	f := res.Findings[0]
	if f.Class != "gc-pressure" || f.Severity < rules.Medium || f.Impact < 0.05 {
		t.Errorf("finding: %s %s impact %.3f", f.Class, f.Severity, f.Impact)
	}
	if !strings.Contains(f.Summary, "cycles/s") || !strings.Contains(f.Fix, "GOGC") {
		t.Errorf("summary %q / fix %q", f.Summary, f.Fix)
	}
	t.Log(f.Summary)
	t.Log(f.Fix)
}

func TestSilentOnQuietLog(t *testing.T) {
	res := rules.Run(facts.New(withLog(t, quiet())), []*rules.Rule{Rule})
	if len(res.Findings) != 0 || len(res.NotChecked) != 0 {
		t.Errorf("findings %v, not checked %v", res.Findings, res.NotChecked)
	}
}

func TestStepsAsideForCPUProfile(t *testing.T) {
	ev := withLog(t, realD1Bad(t)).Derive().
		Profile(evidence.CPU, testprof.Build(testprof.Stack{Value: 1000, Funcs: []string{"runtime.gcBgMarkWorker"}})).Evidence()
	if res := rules.Run(facts.New(ev), []*rules.Rule{Rule}); len(res.Findings) != 0 {
		t.Errorf("GC003 duplicated GC001: %v", res.Findings)
	}
}

func TestNotCheckedWithoutLogOrWithShortLog(t *testing.T) {
	res := rules.Run(facts.New(evidence.NewBuilder().Evidence()), []*rules.Rule{Rule})
	if len(res.NotChecked) != 1 || res.NotChecked[0].Missing[0] != rules.GCTrace {
		t.Errorf("not checked: %+v", res.NotChecked)
	}
	short := strings.Join(strings.Split(quiet(), "\n")[:3], "\n")
	res = rules.Run(facts.New(withLog(t, short)), []*rules.Rule{Rule})
	if len(res.NotChecked) != 1 || !strings.Contains(res.NotChecked[0].Reason, "cycles") {
		t.Errorf("short log: %+v", res.NotChecked)
	}
}

func TestInferGOGC(t *testing.T) {
	if g := inferGOGC(40<<20, 20<<20, 0); g != 100 {
		t.Errorf("GOGC = %d, want 100", g)
	}
	if g := inferGOGC(4<<20, 3<<20, 0); g != 0 {
		t.Errorf("small heap: GOGC = %d, want 0 (too coarse)", g)
	}
}
