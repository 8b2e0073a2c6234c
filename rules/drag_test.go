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
// beside 40% of unowned GC is estimated at 0.40/0.60 = 67%, above the 1.3
// times its frames' share (52%) a fix that states no range is estimated at
// otherwise, and stated from 40% (none of the GC is its) to 2.2 times its
// frames' 40% (what fixes removed beyond their frames, at most): 88%. GC
// owned by a finding of its own (20% here) is not added again: the estimate
// is then 1.3 times the frames' share.
func TestCauseCarriesUnownedOverhead(t *testing.T) {
	ev := testprof.Evidence(map[evidence.Kind]*profile.Profile{evidence.CPU: testprof.Build(
		testprof.Stack{Value: 40, Funcs: []string{"main.format"}},
		testprof.Stack{Value: 20, Funcs: []string{"main.other"}},
		testprof.Stack{Value: 40, Funcs: []string{"runtime.gcBgMarkWorker"}},
	)})
	res := rules.Run(facts.New(ev), []*rules.Rule{claiming("F", rules.LevelCode, evidence.FuncPrefix("main.format"), rules.High)})
	f := res.Findings[0]
	if math.Abs(f.Impact-0.4/0.6) > 1e-9 || f.ImpactRange == nil || math.Abs(f.ImpactRange[0]-0.4) > 1e-9 || math.Abs(f.ImpactRange[1]-0.88) > 1e-9 {
		t.Errorf("impact %.3f range %v, want 0.667 [0.40, 0.88]", f.Impact, f.ImpactRange)
	}

	owned := testprof.Evidence(map[evidence.Kind]*profile.Profile{evidence.CPU: testprof.Build(
		testprof.Stack{Value: 40, Funcs: []string{"main.format"}},
		testprof.Stack{Value: 40, Funcs: []string{"main.other"}},
		testprof.Stack{Value: 20, Funcs: []string{"runtime.gcBgMarkWorker"}},
	)})
	res = rules.Run(facts.New(owned), []*rules.Rule{
		claiming("F", rules.LevelCode, evidence.FuncPrefix("main.format"), rules.High),
		claiming("G", rules.LevelRuntime, evidence.FuncPrefix("runtime.gcBgMarkWorker"), rules.Medium),
	})
	for _, f := range res.Findings {
		if f.ID == "F" && (math.Abs(f.Impact-0.52) > 1e-9 || f.ImpactRange == nil || math.Abs(f.ImpactRange[1]-0.88) > 1e-9) {
			t.Errorf("with the GC owned by G: F's impact %.3f range %v, want 0.52 [0.40, 0.88]", f.Impact, f.ImpactRange)
		}
	}
}

// rangedFinding diagnoses 40% of CPU in main.format beside 10% of unowned
// GC with a rule that claims main.format and states impact in rng.
func rangedFinding(impact float64, rng [2]float64) rules.Finding {
	ev := testprof.Evidence(map[evidence.Kind]*profile.Profile{evidence.CPU: testprof.Build(
		testprof.Stack{Value: 40, Funcs: []string{"main.format"}},
		testprof.Stack{Value: 50, Funcs: []string{"main.other"}},
		testprof.Stack{Value: 10, Funcs: []string{"runtime.gcBgMarkWorker"}},
	)})
	r := &rules.Rule{ID: "R", Class: "hot-function", Needs: []rules.Input{rules.CPU}, Facts: []facts.Key{facts.CPUStacks}, Check: func(p *rules.Pass) error {
		cpu := facts.Get(p.Facts, facts.CPUStacks)
		p.Report(rules.Finding{Severity: rules.High, Resource: "cpu", Impact: impact, ImpactRange: &rng,
			Claim: &rules.Claim{Level: rules.LevelCode, CPU: cpu.Has(evidence.FuncPrefix("main.format"))}})
		return nil
	}}
	return rules.Run(facts.New(ev), []*rules.Rule{r}).Findings[0]
}

// A rule's own range is kept: its top gains the unowned overhead, not the
// spread for findings that state none.
func TestStatedRangeKeepsItsTop(t *testing.T) {
	f := rangedFinding(0.4, [2]float64{0.3, 0.45})
	if math.Abs(f.Impact-0.4/0.9) > 1e-9 || math.Abs(f.ImpactRange[0]-0.3) > 1e-9 || math.Abs(f.ImpactRange[1]-0.55) > 1e-9 {
		t.Errorf("impact %.3f range %v, want 0.444 [0.30, 0.55]", f.Impact, f.ImpactRange)
	}
}

// An estimate set midway in a stated range sits above the samples the
// finding owns; the range's floor is still what it owns, so the work drags
// its collector as before (H2's missing index: the walk, 62% of the JVM's
// CPU, estimated midway to all of query execution).
func TestMidwayEstimateStillDrags(t *testing.T) {
	f := rangedFinding(rules.Midway(0.4, 0.6), [2]float64{0.4, 0.6})
	if math.Abs(f.Impact-0.5/0.9) > 1e-9 || math.Abs(f.ImpactRange[0]-0.4) > 1e-9 || math.Abs(f.ImpactRange[1]-0.7) > 1e-9 {
		t.Errorf("impact %.3f range %v, want 0.556 [0.40, 0.70]", f.Impact, f.ImpactRange)
	}
}

// What the work drags is added after the engine kept the CPU impacts within
// all of the CPU, so it must not take them above it: 60% in the program's
// code beside 20% of unowned GC is estimated at 78% (1.3 times its share,
// above the drag's 75%), and a finding read from
// other evidence at 30% then gives way (casebook E2 read 1.01: NET001's
// connections with their drag beside SCHED002's churn estimate).
func TestDragKeepsImpactsWithinTheCPU(t *testing.T) {
	ev := testprof.Evidence(map[evidence.Kind]*profile.Profile{evidence.CPU: testprof.Build(
		testprof.Stack{Value: 60, Funcs: []string{"main.dial"}},
		testprof.Stack{Value: 20, Funcs: []string{"main.other"}},
		testprof.Stack{Value: 20, Funcs: []string{"runtime.gcBgMarkWorker"}},
	)})
	res := rules.Run(facts.New(ev), []*rules.Rule{
		claiming("CODE", rules.LevelCode, evidence.FuncPrefix("main.dial"), rules.High),
		finding("EST", rules.Finding{Impact: 0.3, Severity: rules.Medium, Resource: "cpu"}),
	})
	var cpu float64
	for _, f := range res.Findings {
		cpu += f.Impact
		if f.ID == "CODE" && math.Abs(f.Impact-0.78) > 1e-9 {
			t.Errorf("CODE's impact %.3f, want 1.3 x 0.60 = 0.78 (above the drag's 0.60/0.80)", f.Impact)
		}
	}
	if cpu > 1+1e-9 {
		t.Errorf("CPU impacts sum to %.3f after the drag", cpu)
	}
}

// Severity follows the estimate the finding ranks by: 17% of CPU in the
// program's code is medium by its frames (SeverityFor), and 1.3 times it,
// 22%, what measured fixes removed, is high. A rule that sets no Regrade
// (its grade capped for a reason other than size) keeps its own.
func TestSeverityFollowsTheEstimate(t *testing.T) {
	ev := testprof.Evidence(map[evidence.Kind]*profile.Profile{evidence.CPU: testprof.Build(
		testprof.Stack{Value: 17, Funcs: []string{"main.format"}},
		testprof.Stack{Value: 83, Funcs: []string{"main.other"}},
	)})
	for _, c := range []struct {
		regrade func(float64) rules.Severity
		want    rules.Severity
	}{{rules.SeverityFor, rules.High}, {nil, rules.Medium}} {
		r := &rules.Rule{ID: "R", Class: "hot-function", Needs: []rules.Input{rules.CPU}, Facts: []facts.Key{facts.CPUStacks}, Check: func(p *rules.Pass) error {
			cpu := facts.Get(p.Facts, facts.CPUStacks)
			share := cpu.Share(evidence.FuncPrefix("main.format"))
			p.Report(rules.Finding{Severity: rules.SeverityFor(share), Resource: "cpu", Impact: share,
				Claim: &rules.Claim{Level: rules.LevelCode, CPU: cpu.Has(evidence.FuncPrefix("main.format")), Regrade: c.regrade}})
			return nil
		}}
		f := rules.Run(facts.New(ev), []*rules.Rule{r}).Findings[0]
		if math.Abs(f.Impact-0.221) > 1e-9 || f.Severity != c.want {
			t.Errorf("regrade set %v: impact %.3f severity %s, want 0.221 %s", c.regrade != nil, f.Impact, f.Severity, c.want)
		}
	}
}
