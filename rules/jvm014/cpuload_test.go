package jvm014

import (
	"strings"
	"testing"
	"time"

	"github.com/perfdoctor/perfdoctor/facts"

	"github.com/perfdoctor/perfdoctor/evidence"
	"github.com/perfdoctor/perfdoctor/formats/jfr"
	"github.com/perfdoctor/perfdoctor/rules"
	"github.com/perfdoctor/perfdoctor/rules/jvmthreads/jvmthreadstest"
)

// Recorded on a host kept busy by other work (load average 20 on 2 CPUs):
// a JVM using half a CPU while others take the rest is starved.
func TestFiresOnStarvedRecording(t *testing.T) {
	res := jvmthreadstest.Run(t, "switches", Rule)
	if len(res.Findings) != 1 || res.Findings[0].Severity != rules.Low || !strings.Contains(res.Findings[0].Summary, "Other processes kept the host's CPUs saturated") {
		t.Fatalf("got %+v", res.Findings)
	}
}

// An idle JVM on the same busy host needs no CPU and is not starved.
func TestSilentOnIdleJVM(t *testing.T) {
	for _, mode := range []string{"unlocked", "pinned", "rightpool"} {
		if res := jvmthreadstest.Run(t, mode, Rule); len(res.Findings) != 0 {
			t.Errorf("%s: %+v", mode, res.Findings)
		}
	}
}

// readings builds a JVM summary from (JVM, machine) pairs a second apart:
// the saturated and bursty shapes could not be recorded on the shared
// host, whose other work kept every reading at 100%.
func readings(pairs ...[2]float64) *evidence.Evidence {
	s := &jfr.Summary{HWThreads: 2, Start: time.Unix(0, 0), End: time.Unix(int64(len(pairs)), 0)}
	for i, p := range pairs {
		s.Threading.CPULoad = append(s.Threading.CPULoad, jfr.CPULoad{Time: time.Unix(int64(i), 0), JVMUser: p[0] * 0.9, JVMSystem: p[0] * 0.1, Machine: p[1]})
	}
	ev := evidence.NewBuilder("test").Evidence()
	ev.JVM = s
	return ev
}

// A JVM at 90-100% of the CPUs is saturated, and ranks under the CPU cost
// another rule names.
func TestSaturatedLinksToCPUCause(t *testing.T) {
	hot := &rules.Rule{ID: "TEST001", Class: "hot-function", Check: func(p *rules.Pass) error {
		p.Report(rules.Finding{Severity: rules.High, Impact: 0.5, Resource: "cpu", Summary: "hot"})
		return nil
	}}
	res := rules.Run(facts.New(readings([2]float64{0.95, 0.97}, [2]float64{1, 1}, [2]float64{0.9, 0.95}, [2]float64{0.4, 0.5})), []*rules.Rule{hot, Rule})
	if len(res.Findings) != 2 {
		t.Fatalf("got %+v", res.Findings)
	}
	f := res.Findings[1]
	if f.Rule != "JVM014" || f.Severity != rules.Medium || f.CausedBy != "TEST001" || !strings.Contains(f.Summary, "kept the CPUs saturated") {
		t.Errorf("got %+v", f)
	}
}

func TestBursts(t *testing.T) {
	res := rules.Run(facts.New(readings([2]float64{0.05, 0.2}, [2]float64{0.95, 1}, [2]float64{0.05, 0.2}, [2]float64{0.1, 0.2}, [2]float64{0.9, 0.95})), []*rules.Rule{Rule})
	if len(res.Findings) != 1 || !strings.Contains(res.Findings[0].Summary, "in bursts") {
		t.Fatalf("got %+v", res.Findings)
	}
	// Steady moderate load is neither.
	if res := rules.Run(facts.New(readings([2]float64{0.5, 0.6}, [2]float64{0.55, 0.6}, [2]float64{0.6, 0.7})), []*rules.Rule{Rule}); len(res.Findings) != 0 {
		t.Errorf("steady: %+v", res.Findings)
	}
}
