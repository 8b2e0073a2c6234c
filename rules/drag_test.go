package rules_test

import (
	"math"
	"testing"

	"github.com/google/pprof/profile"

	"github.com/perfdoctor/perfdoctor/evidence"
	"github.com/perfdoctor/perfdoctor/facts"
	"github.com/perfdoctor/perfdoctor/internal/testprof"
	"github.com/perfdoctor/perfdoctor/rules"
)

// A cause's work drags the collector and scheduler time no finding owns
// with it, in proportion to its share: 40% of CPU in the program's code
// beside 20% of unowned GC is estimated at 0.40/0.80 = 50%, stated from 40%
// (none of the GC is its) to 60% (all of it). GC owned by a finding of its
// own is not added again.
func TestCauseCarriesUnownedOverhead(t *testing.T) {
	ev := testprof.Evidence(map[evidence.Kind]*profile.Profile{evidence.CPU: testprof.Build(
		testprof.Stack{Value: 40, Funcs: []string{"main.format"}},
		testprof.Stack{Value: 40, Funcs: []string{"main.other"}},
		testprof.Stack{Value: 20, Funcs: []string{"runtime.gcBgMarkWorker"}},
	)})
	res := rules.Run(facts.New(ev), []*rules.Rule{claiming("F", rules.LevelCode, evidence.FuncPrefix("main.format"), rules.High)})
	f := res.Findings[0]
	if math.Abs(f.Impact-0.5) > 1e-9 || f.ImpactRange == nil || math.Abs(f.ImpactRange[0]-0.4) > 1e-9 || math.Abs(f.ImpactRange[1]-0.6) > 1e-9 {
		t.Errorf("impact %.3f range %v, want 0.50 [0.40, 0.60]", f.Impact, f.ImpactRange)
	}

	res = rules.Run(facts.New(ev), []*rules.Rule{
		claiming("F", rules.LevelCode, evidence.FuncPrefix("main.format"), rules.High),
		claiming("G", rules.LevelRuntime, evidence.FuncPrefix("runtime.gcBgMarkWorker"), rules.Medium),
	})
	for _, f := range res.Findings {
		if f.ID == "F" && (math.Abs(f.Impact-0.4) > 1e-9 || f.ImpactRange != nil) {
			t.Errorf("with the GC owned by G: F's impact %.3f range %v, want 0.40 and no range", f.Impact, f.ImpactRange)
		}
	}
}
