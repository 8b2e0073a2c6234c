package bld001

import (
	"strings"
	"testing"

	"github.com/perfdoctor/perfdoctor/facts"

	"github.com/google/pprof/profile"

	"github.com/perfdoctor/perfdoctor/bundle"
	"github.com/perfdoctor/perfdoctor/evidence"
	"github.com/perfdoctor/perfdoctor/internal/testprof"
	"github.com/perfdoctor/perfdoctor/rules"
	"github.com/perfdoctor/perfdoctor/rules/cpu001"
)

// busy is a 10 s CPU profile holding samples×10 ms of CPU in one hot
// function.
func busy(samples int64) *profile.Profile {
	return testprof.Build(testprof.Stack{Value: samples, Funcs: []string{"main.score", "main.handle", "net/http.HandlerFunc.ServeHTTP"}})
}

func service(samples int64, numCPU int, build *bundle.BuildInfo) *evidence.Evidence {
	ev := testprof.Evidence(map[evidence.Kind]*profile.Profile{evidence.CPU: busy(samples)})
	ev.Sources = []string{"b1"}
	ev.SystemEnd = &bundle.SystemSnapshot{
		Machine: bundle.MachineInfo{NumCPU: numCPU},
		Process: &bundle.ProcessInfo{PID: 1, GoVersion: "go1.26.8", Build: build},
	}
	return ev
}

func plainBuild() *bundle.BuildInfo {
	return &bundle.BuildInfo{GoVersion: "go1.26.8", Main: "example.com/svc", MainPackage: "example.com/svc/cmd/server", Source: "executable"}
}

func TestFiresOnABusyServiceBuiltWithoutPGO(t *testing.T) {
	// 1500 samples over 10 s: 1.5 cores of 2.
	res := rules.Run(facts.New(service(1500, 2, plainBuild())), []*rules.Rule{Rule})
	if len(res.Findings) != 1 {
		t.Fatalf("findings %+v", res.Findings)
	}
	f := res.Findings[0]
	if f.Class != "pgo-not-used" || f.Severity != rules.Info || f.Impact != typicalGain || f.Cost != nil {
		t.Errorf("finding %s %s impact %.2f cost %+v", f.Class, f.Severity, f.Impact, f.Cost)
	}
	for _, want := range []string{"perfdoctor pgo b1 -o default.pgo", "example.com/svc/cmd/server", "perfdoctor verify"} {
		if !strings.Contains(f.Fix, want) {
			t.Errorf("fix lacks %q: %s", want, f.Fix)
		}
	}
	if !strings.Contains(f.Summary, "1.5 cores of the 2 CPUs") || !strings.Contains(f.Summary, "2-14%") {
		t.Errorf("summary %q", f.Summary)
	}
}

func TestSilent(t *testing.T) {
	withPGO := plainBuild()
	withPGO.PGO = "/src/cmd/server/default.pgo"
	old := plainBuild()
	old.GoVersion = "go1.20.14"
	for name, ev := range map[string]*evidence.Evidence{
		"built with PGO":       service(1500, 2, withPGO),
		"mostly idle":          service(300, 2, plainBuild()), // 0.3 of 2 cores
		"no build information": service(1500, 2, nil),
		"Go before 1.21":       service(1500, 2, old),
	} {
		if res := rules.Run(facts.New(ev), []*rules.Rule{Rule}); len(res.Findings) != 0 {
			t.Errorf("%s: %+v", name, res.Findings[0])
		}
	}
}

// TestClaimsNoCPU: next to a finding that names the hot function, BLD001
// leaves that finding's impact and cost as they were.
func TestClaimsNoCPU(t *testing.T) {
	alone := rules.Run(facts.New(service(1500, 2, plainBuild())), []*rules.Rule{cpu001.Rule})
	both := rules.Run(facts.New(service(1500, 2, plainBuild())), []*rules.Rule{cpu001.Rule, Rule})
	if len(alone.Findings) != 1 || len(both.Findings) != 2 {
		t.Fatalf("alone %d findings, with BLD001 %d", len(alone.Findings), len(both.Findings))
	}
	a, b := alone.Findings[0], both.Findings[0]
	if b.Rule != "CPU001" || a.Impact != b.Impact || a.Severity != b.Severity {
		t.Errorf("CPU001 alone %.3f %s; next to BLD001 %s %.3f %s", a.Impact, a.Severity, b.Rule, b.Impact, b.Severity)
	}
}
