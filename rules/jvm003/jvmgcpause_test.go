package jvm003

import (
	"strings"
	"testing"
	"time"

	"github.com/perfdoctor/perfdoctor/facts"

	"github.com/perfdoctor/perfdoctor/evidence"
	"github.com/perfdoctor/perfdoctor/formats/jfr"
	"github.com/perfdoctor/perfdoctor/rules"
)

func run(g jfr.GC) rules.Result {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ev := evidence.NewBuilder("test").Evidence()
	ev.JVM = &jfr.Summary{Start: t0, End: t0.Add(20 * time.Second), GC: g}
	return rules.Run(facts.New(ev), []*rules.Rule{Rule})
}

func TestFiresOnPauseShare(t *testing.T) {
	res := run(jfr.GC{Young: "G1New", Old: "G1Old", Collections: 400, PauseTotal: 3 * time.Second, PauseMax: 40 * time.Millisecond, PauseMaxCause: "G1 Evacuation Pause"})
	if len(res.Findings) != 1 || res.Findings[0].Impact != 0.15 || !strings.Contains(res.Findings[0].Summary, "15% of the time") {
		t.Fatalf("got %+v", res.Findings)
	}
}

func TestFiresOnLongPause(t *testing.T) {
	res := run(jfr.GC{Collections: 3, PauseTotal: 1500 * time.Millisecond, PauseMax: 1200 * time.Millisecond, PauseMaxCause: "Allocation Failure"})
	if len(res.Findings) != 1 || res.Findings[0].Severity != rules.High || !strings.Contains(res.Findings[0].Summary, "1.2s (Allocation Failure)") {
		t.Fatalf("got %+v", res.Findings)
	}
}

func TestSilentOnShortPauses(t *testing.T) {
	if res := run(jfr.GC{Collections: 100, PauseTotal: 500 * time.Millisecond, PauseMax: 20 * time.Millisecond}); len(res.Findings) != 0 {
		t.Fatalf("got %+v", res.Findings)
	}
}

func TestNotCheckedWithoutJFR(t *testing.T) {
	res := rules.Run(facts.New(evidence.NewBuilder("test").Evidence()), []*rules.Rule{Rule})
	if len(res.NotChecked) != 1 || res.NotChecked[0].Missing[0] != rules.JVM {
		t.Fatalf("got %+v", res)
	}
}
