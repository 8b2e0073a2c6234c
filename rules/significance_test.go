package rules

import (
	"strings"
	"testing"

	"github.com/perfdoctor/perfdoctor/evidence"
	"github.com/perfdoctor/perfdoctor/facts"
	"github.com/perfdoctor/perfdoctor/internal/testprof"
)

func TestWeighCores(t *testing.T) {
	finding := func(res string, sev Severity, impact float64) Finding {
		return Finding{ID: "X", Resource: res, Severity: sev, Impact: impact}
	}
	for _, c := range []struct {
		name string
		work facts.Work
		f    Finding
		want Severity
	}{
		// An idle server: 26% of 0.06 cores is 0.016 cores.
		{"idle server", facts.Work{Cores: 0.06, Available: 2}, finding("cpu", Medium, 0.26), Low},
		{"busy service", facts.Work{Cores: 0.9, Available: 2}, finding("cpu", High, 0.30), High},
		{"a fifth of a quiet service", facts.Work{Cores: 0.3, Available: 2}, finding("cpu", Medium, 0.20), Medium},
		{"a tenth of a quiet service", facts.Work{Cores: 0.3, Available: 2}, finding("cpu", Medium, 0.10), Low},
		{"a container at its quota", facts.Work{Cores: 0.09, Available: 0.1}, finding("cpu", High, 0.30), High},
		{"latency is not CPU", facts.Work{Cores: 0.06, Available: 2}, finding("latency", High, 0.50), High},
		{"no reading of the cores", facts.Work{}, finding("cpu", High, 0.30), High},
		{"no reading of what it may use", facts.Work{Cores: 0.06}, finding("cpu", Medium, 0.26), Medium},
	} {
		fs := []Finding{c.f}
		weighCores(c.work, fs)
		if fs[0].Severity != c.want {
			t.Errorf("%s: %s, want %s", c.name, fs[0].Severity, c.want)
		}
		if c.name == "idle server" && !strings.Contains(fs[0].ImpactBasis, "gives back 0.016 cores") {
			t.Errorf("%s: basis %q", c.name, fs[0].ImpactBasis)
		}
	}
}

// A finding weighCores held at low stays there when the engine's estimate
// grows: the cores it gives back were judged too few to plan work for.
func TestRegradeKeepsTheCoresCap(t *testing.T) {
	st := evidence.NewStacks(testprof.Build(
		testprof.Stack{Value: 17, Funcs: []string{"main.format"}},
		testprof.Stack{Value: 83, Funcs: []string{"main.other"}},
	), "")
	in := st.Has(evidence.FuncPrefix("main.format"))
	fs := []Finding{{ID: "X", Resource: "cpu", Severity: Medium, Impact: 0.17,
		Claim: &Claim{Level: LevelCode, CPU: in, Regrade: SeverityFor}, Cost: &Cost{CPUClaimed: 0.17, CPUOwned: 0.17}}}
	weighCores(facts.Work{Cores: 0.1, Available: 2}, fs)
	dragOverhead(st, fs)
	if fs[0].Severity != Low || fs[0].Impact < 0.2 {
		t.Errorf("severity %s impact %.3f, want low with the estimate above 0.2", fs[0].Severity, fs[0].Impact)
	}
}
