package jvm016

import (
	"strings"
	"testing"

	"github.com/perfdoctor/perfdoctor/facts"

	"github.com/perfdoctor/perfdoctor/internal/testprof"
	"github.com/perfdoctor/perfdoctor/rules"
)

// AllocStall.java: ZGC on JDK 25 in a 96 MB heap two thirds live.
func TestFiresOnZGCStalls(t *testing.T) {
	res := rules.Run(facts.New(testprof.JVMRecording(t, "allocstall-zgc-jdk25.jfr")), []*rules.Rule{Rule})
	if len(res.Findings) != 1 {
		t.Fatalf("want one finding, got %+v", res.Findings)
	}
	f := res.Findings[0]
	if f.Severity != rules.High || f.Impact < 0.3 || !strings.Contains(f.Summary, "allocation stalls") {
		t.Errorf("severity %s impact %.2f summary %q", f.Severity, f.Impact, f.Summary)
	}
	if len(f.Locations) == 0 || f.Locations[0].Function != "AllocStall.render" || f.Locations[0].Line == 0 {
		t.Errorf("locations %+v, want AllocStall.render first", f.Locations)
	}
	if !strings.Contains(f.Fix, "SoftMaxHeapSize") || !strings.Contains(f.Fix, "JDK 23") {
		t.Errorf("fix %q", f.Fix)
	}
}

// GCHeavy.java: G1 on JDK 17 in a 128 MB heap whose live set churns.
func TestFiresOnEvacuationFailures(t *testing.T) {
	res := rules.Run(facts.New(testprof.JVMRecording(t, "gcheavy-jdk17.jfr")), []*rules.Rule{Rule})
	if len(res.Findings) != 1 || !strings.Contains(res.Findings[0].Summary, "to-space exhausted") || res.Findings[0].Severity != rules.Medium {
		t.Fatalf("got %+v", res.Findings)
	}
}

// Healthy.java under G1 (JDK 17, 25) and ZGC (JDK 25).
func TestSilentOnHealthy(t *testing.T) {
	for _, name := range []string{"healthy-jdk17.jfr", "healthy-jdk25.jfr", "healthy-zgc-jdk25.jfr"} {
		if res := rules.Run(facts.New(testprof.JVMRecording(t, name)), []*rules.Rule{Rule}); len(res.Findings) != 0 {
			t.Errorf("%s: %+v", name, res.Findings)
		}
	}
}
