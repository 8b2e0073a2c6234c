package jvm015

import (
	"strings"
	"testing"
	"time"

	"github.com/perfdoctor/perfdoctor/facts"

	"github.com/perfdoctor/perfdoctor/evidence"
	"github.com/perfdoctor/perfdoctor/formats/jfr"
	"github.com/perfdoctor/perfdoctor/internal/testprof"
	"github.com/perfdoctor/perfdoctor/rules"
)

// Safepoints.java on JDK 17 with the Serial collector: a counted loop
// without safepoint polls holds every safepoint up.
func TestFiresOnCountedLoop(t *testing.T) {
	res := rules.Run(facts.New(testprof.JVMRecording(t, "safepoints-jdk17.jfr")), []*rules.Rule{Rule})
	if len(res.Findings) == 0 {
		t.Fatalf("no finding: %+v", res)
	}
	f := res.Findings[0]
	if f.Severity < rules.Medium || f.Impact < 0.2 || !strings.Contains(f.Summary, "to reach safepoints") {
		t.Errorf("severity %s impact %.2f summary %q", f.Severity, f.Impact, f.Summary)
	}
	if len(f.Locations) == 0 || f.Locations[0].Function != "Safepoints.checksum" {
		t.Errorf("locations %+v, want Safepoints.checksum first", f.Locations)
	}
	if !strings.Contains(f.Fix, "-XX:+UseCountedLoopSafepoints") || !strings.Contains(f.Fix, "Serial") {
		t.Errorf("fix %q", f.Fix)
	}
}

// Safepoints.java on JDK 25 with jdk.SafepointLatency enabled: the late
// thread's own stack names the loop.
func TestNamesTheLoopFromSafepointLatency(t *testing.T) {
	res := rules.Run(facts.New(testprof.JVMRecording(t, "safepoints-jdk25.jfr")), []*rules.Rule{Rule})
	if len(res.Findings) == 0 {
		t.Fatalf("no finding: %+v", res)
	}
	f := res.Findings[0]
	if len(f.Locations) == 0 || f.Locations[0].Function != "Safepoints.checksum" || !strings.Contains(f.Fix, "UseCountedLoopSafepoints is off") {
		t.Errorf("locations %+v fix %q", f.Locations, f.Fix)
	}
}

// Healthy.java on JDK 17 and 25, G1 and ZGC: nothing waits for safepoints.
func TestSilentOnHealthy(t *testing.T) {
	for _, name := range []string{"healthy-jdk17.jfr", "healthy-jdk25.jfr", "healthy-zgc-jdk25.jfr"} {
		if res := rules.Run(facts.New(testprof.JVMRecording(t, name)), []*rules.Rule{Rule}); len(res.Findings) != 0 {
			t.Errorf("%s: %+v", name, res.Findings)
		}
	}
}

// Healthy.java on JDK 17 while jcmd takes heap dumps (record.sh's
// heapdumps): the operation, who asked for it, and what to do instead.
func TestFiresOnHeapDumpsByTooling(t *testing.T) {
	res := rules.Run(facts.New(testprof.JVMRecording(t, "heapdumps-jdk17.jfr")), []*rules.Rule{Rule})
	if len(res.Findings) != 1 {
		t.Fatalf("want one finding, got %+v", res.Findings)
	}
	f := res.Findings[0]
	if f.Severity < rules.Medium || !strings.Contains(f.Summary, "mostly HeapDumper") || !strings.Contains(f.Summary, "Attach Listener") ||
		!strings.Contains(f.Fix, "jdk.OldObjectSample") || !strings.Contains(f.Fix, "attach mechanism") {
		t.Errorf("severity %s summary %q fix %q", f.Severity, f.Summary, f.Fix)
	}
}

func TestPrescriptionByOperation(t *testing.T) {
	for _, c := range []struct {
		op   jfr.VMOperation
		jdk  int
		want []string
	}{
		{jfr.VMOperation{Name: "BulkRevokeBias"}, 11, []string{"-XX:-UseBiasedLocking", "This JVM is JDK 11"}},
		{jfr.VMOperation{Name: "GC_HeapInspection", Callers: []string{"Attach Listener"}}, 21, []string{"class histograms", "attach mechanism"}},
		{jfr.VMOperation{Name: "RedefineClasses", Callers: []string{"main"}}, 21, []string{"instrumenting agent"}},
		{jfr.VMOperation{Name: "PrintJNI"}, 21, []string{"PrintJNI stops the JVM", "an unnamed thread"}},
	} {
		got := prescription(c.op, c.jdk)
		for _, w := range c.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s on JDK %d: %q lacks %q", c.op.Name, c.jdk, got, w)
			}
		}
	}
}

// A monitoring thread dumping all stacks 50 times a second, through the
// attach listener: the operation's own prescription.
func TestFiresOnThreadDumps(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ev := evidence.NewBuilder("test").Evidence()
	ev.JVM = &jfr.Summary{Start: t0, End: t0.Add(10 * time.Second), JVMVersion: "OpenJDK 64-Bit Server VM (11.0.2+9) for linux-amd64",
		VM: jfr.VM{Safepoints: 520, Operations: []jfr.VMOperation{
			{Name: "ThreadDump", AtSafepoint: true, Count: 500, Total: 900 * time.Millisecond, Max: 8 * time.Millisecond, Callers: []string{"Attach Listener"}},
			{Name: "G1CollectForAllocation", AtSafepoint: true, Count: 20, Total: 2 * time.Second, Max: 200 * time.Millisecond},
			{Name: "ClassLoaderStatsOperation", AtSafepoint: true, Count: 2, Total: 300 * time.Millisecond, Max: 150 * time.Millisecond},
		}}}
	res := rules.Run(facts.New(ev), []*rules.Rule{Rule})
	if len(res.Findings) != 1 {
		t.Fatalf("want one finding, got %+v", res.Findings)
	}
	f := res.Findings[0]
	if f.Impact != 0.09 || !strings.Contains(f.Summary, "mostly ThreadDump") || !strings.Contains(f.Fix, "attach mechanism") {
		t.Errorf("impact %.3f summary %q fix %q", f.Impact, f.Summary, f.Fix)
	}
}

func TestNotCheckedWithoutJFR(t *testing.T) {
	res := rules.Run(facts.New(evidence.NewBuilder("test").Evidence()), []*rules.Rule{Rule})
	if len(res.NotChecked) != 1 || res.NotChecked[0].Missing[0] != rules.JVM {
		t.Fatalf("got %+v", res)
	}
}
