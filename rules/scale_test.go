package rules

import (
	"math"
	"testing"
)

// The engine scales a finding's stated range with its impact: a range
// left unscaled would no longer hold the point it brackets.
func TestScaleImpactScalesTheRange(t *testing.T) {
	f := Finding{Impact: 0.6, ImpactRange: &[2]float64{0.6, 0.8}}
	shared := f.ImpactRange
	f.scaleImpact(0.5)
	if f.Impact != 0.3 || f.ImpactRange[0] != 0.3 || f.ImpactRange[1] != 0.4 {
		t.Errorf("impact %v range %v, want 0.3 [0.3, 0.4]", f.Impact, *f.ImpactRange)
	}
	if shared[0] != 0.6 {
		t.Error("the rule's own range value was changed in place")
	}
}

// A cause's gain adds what its CPU symptoms own of the samples, not an
// impact a symptom read from other evidence that overlaps the cause's.
func TestGainCountsWhatSymptomsOwn(t *testing.T) {
	fs := []Finding{
		{ID: "DB001", Resource: "cpu", Impact: 0.8, Explains: []string{"NET003", "GC001"}},
		{ID: "NET003", Resource: "cpu", Impact: 0.21, Cost: &Cost{CPUClaimed: 0.03, CPUOwned: 0.01}}, // from /proc
		{ID: "GC001", Resource: "cpu", Impact: 0.05, Cost: &Cost{CPUClaimed: 0.05, CPUOwned: 0.05}},
	}
	share, _, _, _, ok := Gain(fs, 0)
	if !ok || share < 0.86-1e-9 || share > 0.86+1e-9 {
		t.Errorf("share %v, want 0.8 + 0.01 + 0.05 = 0.86", share)
	}
}

// A fix that removes the work states a floor and no top: its gain's high
// end is unbounded, its low end and estimate as for any range.
func TestGainOfAFixThatRemovesTheWork(t *testing.T) {
	fs := []Finding{{ID: "DB001", Resource: "cpu", Impact: 0.75, ImpactRange: &[2]float64{0.5, 0.9}, RemovesWork: true}}
	_, times, low, high, ok := Gain(fs, 0)
	if !ok || times != 4 || low != 2 || !math.IsInf(high, 1) {
		t.Errorf("times %v low %v high %v, want 4, 2 and no top", times, low, high)
	}
	fs[0].RemovesWork = false
	if _, _, _, high, _ := Gain(fs, 0); high < 10-1e-9 || high > 10+1e-9 {
		t.Errorf("high %v, want 10 where the fix only speeds the work up", high)
	}
}
