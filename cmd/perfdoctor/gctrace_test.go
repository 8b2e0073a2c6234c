package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// diagnose --gctrace reads a real gctrace log on its own, and a missing log
// is a one-line error.
func TestDiagnoseGCTraceOnly(t *testing.T) {
	code, stdout, stderr := perfdoctor(t, "diagnose", "--gctrace", "../../formats/gctrace/testdata/d1-bad.log", "--format", "json")
	if code != 0 {
		t.Fatalf("code %d: %s", code, stderr)
	}
	var doc struct {
		Inputs struct {
			Runtime *struct {
				GCCyclesPerSec float64  `json:"gc_cycles_per_sec"`
				Sources        []string `json:"sources"`
			}
		}
	}
	if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
		t.Fatal(err)
	}
	if rt := doc.Inputs.Runtime; rt == nil || rt.GCCyclesPerSec < 5 || strings.Join(rt.Sources, ",") != "gctrace" {
		t.Errorf("inputs.runtime = %+v", doc.Inputs.Runtime)
	}
	code, _, stderr = perfdoctor(t, "diagnose", "--gctrace", "/nonexistent/gc.log")
	if code != 1 || !strings.Contains(stderr, "--gctrace") {
		t.Errorf("missing log: code %d, %q", code, stderr)
	}
}
