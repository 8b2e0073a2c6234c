package diagnose

import (
	"os"
	"strings"
	"testing"

	"github.com/perfdoctor/perfdoctor/evidence"
)

func TestNothingToDiagnose(t *testing.T) {
	if _, err := Run(t.Context(), Request{}); err == nil || !strings.Contains(err.Error(), "nothing to diagnose") {
		t.Fatalf("no paths, no gctrace: %v", err)
	}
	ev := evidence.NewBuilder("test").Evidence()
	if _, err := Run(t.Context(), Request{Evidence: ev, Paths: []string{"x"}}); err == nil || !strings.Contains(err.Error(), "not both") {
		t.Fatalf("evidence and paths: %v", err)
	}
}

// A gctrace log alone is evidence (D1's log, recorded from the casebook's
// bad variant): the report carries the producer named in the request and
// the runtime figures read from the log.
func TestGCTraceAlone(t *testing.T) {
	f, err := os.Open("../formats/gctrace/testdata/d1-bad.log")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rep, err := Run(t.Context(), Request{Tool: "perfdoctor test", Load: evidence.LoadOptions{GCTrace: f, GCTraceName: "d1-bad.log"}})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Tool != "perfdoctor test" {
		t.Errorf("tool %q", rep.Tool)
	}
	if rt := rep.Inputs.Runtime; rt == nil || rt.GCCyclesPerSec < 5 {
		t.Errorf("runtime figures from the log: %+v", rep.Inputs.Runtime)
	}
}
