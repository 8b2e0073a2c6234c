package jvm006

import (
	"strings"
	"testing"

	"github.com/perfdoctor/perfdoctor/facts"

	"github.com/google/pprof/profile"

	"github.com/perfdoctor/perfdoctor/evidence"
	"github.com/perfdoctor/perfdoctor/internal/testprof"
	"github.com/perfdoctor/perfdoctor/rules"
)

func stack(v int64, funcs ...string) testprof.Stack { return testprof.Stack{Value: v, Funcs: funcs} }

func run(cpu *profile.Profile) rules.Result {
	return rules.Run(facts.New(testprof.Evidence(map[evidence.Kind]*profile.Profile{evidence.CPU: cpu})), []*rules.Rule{Rule})
}

func TestFiresOnBoxedCounters(t *testing.T) {
	res := run(testprof.Build(
		stack(120, "java.lang.Long.valueOf", "com.acme.Stats.record", "com.acme.Server.handle"),
		stack(880, "com.acme.Server.handle"),
	))
	if len(res.Findings) != 1 || !strings.Contains(res.Findings[0].Summary, "12% of CPU (in com.acme.Stats.record)") {
		t.Fatalf("got %+v", res.Findings)
	}
}

func TestSilentBelowThreshold(t *testing.T) {
	res := run(testprof.Build(
		stack(20, "java.lang.Integer.valueOf", "com.acme.Stats.record", "com.acme.Server.handle"),
		stack(980, "com.acme.Server.handle"),
	))
	if len(res.Findings) != 0 {
		t.Fatalf("got %+v", res.Findings)
	}
}
