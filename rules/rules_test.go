package rules_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/perfdoctor/perfdoctor/facts"

	"github.com/google/pprof/profile"

	"github.com/perfdoctor/perfdoctor/bundle"
	"github.com/perfdoctor/perfdoctor/evidence"
	"github.com/perfdoctor/perfdoctor/formats/jfr"
	"github.com/perfdoctor/perfdoctor/internal/testprof"
	"github.com/perfdoctor/perfdoctor/rules"
)

func reporter(id string, impact float64, sev rules.Severity) *rules.Rule {
	return &rules.Rule{ID: id, Class: "hot-function", Needs: []rules.Input{rules.CPU}, Check: func(p *rules.Pass) error {
		p.Report(rules.Finding{Impact: impact, Severity: sev})
		return nil
	}}
}

func cpuEvidence() *evidence.Evidence {
	return testprof.Evidence(map[evidence.Kind]*profile.Profile{evidence.CPU: testprof.Build(testprof.Stack{Value: 200, Funcs: []string{"main.f"}})})
}

func TestMissingInputsAreNotChecked(t *testing.T) {
	r := &rules.Rule{ID: "M1", Class: "lock-contention", Needs: []rules.Input{rules.Mutex, rules.CPU}, Check: func(*rules.Pass) error {
		t.Error("rule ran without its inputs")
		return nil
	}}
	res := rules.Run(facts.New(cpuEvidence()), []*rules.Rule{r})
	if len(res.NotChecked) != 1 || res.NotChecked[0].Reason != "needs mutex" || len(res.NotChecked[0].Collect) != 1 {
		t.Fatalf("not checked = %+v", res.NotChecked)
	}
}

// A rule with alternative sources runs on any one of them, and without
// any says it needs one of them.
func TestOneOfAlternativeInputs(t *testing.T) {
	ran := 0
	r := &rules.Rule{ID: "N1", Class: "downstream-wait", NeedsOneOf: []rules.Input{rules.Trace, rules.CPU}, Check: func(*rules.Pass) error {
		ran++
		return nil
	}}
	if res := rules.Run(facts.New(cpuEvidence()), []*rules.Rule{r}); ran != 1 || len(res.NotChecked) != 0 {
		t.Errorf("with a CPU profile: ran %d times, not checked %+v", ran, res.NotChecked)
	}
	res := rules.Run(facts.New(testprof.Evidence(map[evidence.Kind]*profile.Profile{evidence.Heap: testprof.Build(testprof.Stack{Value: 1, Funcs: []string{"main.f"}})})), []*rules.Rule{r})
	if ran != 1 || len(res.NotChecked) != 1 || res.NotChecked[0].Reason != "needs trace or cpu" || len(res.NotChecked[0].Collect) != 2 {
		t.Errorf("with neither: ran %d times, not checked %+v", ran, res.NotChecked)
	}
}

func TestAPanickingRuleDoesNotStopTheRun(t *testing.T) {
	bad := &rules.Rule{ID: "P1", Class: "hot-function", Needs: []rules.Input{rules.CPU}, Check: func(*rules.Pass) error { panic("boom") }}
	res := rules.Run(facts.New(cpuEvidence()), []*rules.Rule{bad, reporter("OK", 0.1, rules.Low)})
	if len(res.Findings) != 1 || len(res.NotChecked) != 1 || !strings.Contains(res.NotChecked[0].Reason, "boom") {
		t.Fatalf("got %+v / %+v", res.Findings, res.NotChecked)
	}
}

func TestImpactIsClamped(t *testing.T) {
	res := rules.Run(facts.New(cpuEvidence()), []*rules.Rule{reporter("A", 1.7, rules.High), reporter("B", -0.2, rules.Low)})
	if res.Findings[0].Impact != 1 || res.Findings[1].Impact != 0 {
		t.Errorf("impacts %v, %v", res.Findings[0].Impact, res.Findings[1].Impact)
	}
}

func TestFindingJSONContract(t *testing.T) {
	b, err := json.Marshal(rules.Finding{Rule: "GC001", Class: "gc-pressure", Severity: rules.High, Impact: 0.3})
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	json.Unmarshal(b, &m)
	for _, key := range []string{"rule", "class", "severity", "impact", "summary", "evidence", "fix", "locations"} {
		if _, ok := m[key]; !ok {
			t.Errorf("JSON lacks %q: %s", key, b)
		}
	}
	if m["severity"] != "high" || m["evidence"] == nil || m["locations"] == nil {
		t.Errorf("severity or empty lists wrong: %s", b)
	}
}

// TestOtherRuntimesRulesAreNotApplicable: "not checked" lists what the user
// could still collect, so a JVM rule stays out of a Go service's report,
// Go-only rules out of a JVM's, both out of a native process's; with no
// runtime known, both are listed.
func TestOtherRuntimesRulesAreNotApplicable(t *testing.T) {
	needs := func(id string, in rules.Input) *rules.Rule {
		return &rules.Rule{ID: id, Class: "x", Needs: []rules.Input{in}, Check: func(*rules.Pass) error { return nil }}
	}
	catalog := []*rules.Rule{needs("JVM", rules.JVM), needs("GCTRACE", rules.GCTrace)}
	notChecked := func(ev *evidence.Evidence) string {
		var ids []string
		for _, nc := range rules.Run(facts.New(ev), catalog).NotChecked {
			ids = append(ids, nc.Rule)
		}
		return strings.Join(ids, ",")
	}
	goService := cpuEvidence()
	goService.Profiles[evidence.Heap] = testprof.Build(testprof.Stack{Value: 1, Funcs: []string{"main.f"}})
	jvm := cpuEvidence()
	jvm.JVM = &jfr.Summary{}
	native := cpuEvidence() // a C service: perf stacks and its /proc snapshot, no Go build info
	native.Profiles[evidence.Perf] = native.Profiles[evidence.CPU]
	native.SystemEnd = &bundle.SystemSnapshot{Process: &bundle.ProcessInfo{PID: 42, Comm: "pages"}}
	for name, tc := range map[string]struct {
		ev   *evidence.Evidence
		want string
	}{
		"go service": {goService, "GCTRACE"},
		"jvm":        {jvm, ""}, // the JVM rule runs; the gctrace one does not apply
		"native":     {native, ""},
		"unknown":    {cpuEvidence(), "JVM,GCTRACE"},
	} {
		if got := notChecked(tc.ev); got != tc.want {
			t.Errorf("%s: not checked %q, want %q", name, got, tc.want)
		}
	}
}

// A rule that reads a fact it did not declare is a defect: the engine
// reports it as not checked, naming the fact, and goes on.
func TestUndeclaredFactFailsTheRule(t *testing.T) {
	sneaky := &rules.Rule{ID: "X001", Class: "hot-function", Check: func(p *rules.Pass) error {
		facts.Get(p.Facts, facts.CPUStacks)
		return nil
	}}
	res := rules.Run(facts.New(evidence.NewBuilder("test").Evidence()), []*rules.Rule{sneaky})
	if len(res.NotChecked) != 1 || !strings.Contains(res.NotChecked[0].Reason, "reads fact cpu-stacks without declaring it") {
		t.Fatalf("not checked %+v", res.NotChecked)
	}
}
