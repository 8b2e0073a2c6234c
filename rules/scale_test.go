package rules

import "testing"

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
