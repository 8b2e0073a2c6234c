package report

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/perfdoctor/perfdoctor/facts"

	"github.com/perfdoctor/perfdoctor/evidence"
	"github.com/perfdoctor/perfdoctor/rules"
	"github.com/perfdoctor/perfdoctor/rules/catalog"
)

// A gctrace log alone (diagnose --gctrace) gives the runtime line, and the
// JSON still matches the schema with inputs.runtime present.
func TestRuntimeFiguresFromGCTrace(t *testing.T) {
	f, err := os.Open("../formats/gctrace/testdata/d1-bad.log")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ev, err := evidence.Load(t.Context(), evidence.LoadOptions{GCTrace: f, GCTraceName: "d1-bad.log"})
	if err != nil {
		t.Fatal(err)
	}
	set := facts.New(ev)
	rep := New("perfdoctor test", set, rules.Run(set, catalog.All()))
	rt := rep.Inputs.Runtime
	if rt == nil || rt.GCCyclesPerSec < 5 || rt.GCPauseP99Ms <= 0 || rt.GCCPUShare <= 0 || len(rt.Sources) != 1 || rt.Sources[0] != "gctrace" {
		t.Fatalf("runtime figures: %+v", rt)
	}
	var text bytes.Buffer
	if err := WriteText(&text, rep); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), "  runtime: GC 11.5 cycles/s, GC CPU 12%") || !strings.Contains(text.String(), "gctrace log") {
		t.Errorf("text report:\n%s", text.String())
	}

	matchesSchema(t, "with runtime figures", rep)
}

func TestNoRuntimeLineWithoutSources(t *testing.T) {
	var text bytes.Buffer
	if err := WriteText(&text, sampleReport(t)); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(text.String(), "runtime:") {
		t.Errorf("runtime line without trace, metrics or gctrace:\n%s", text.String())
	}
}
