package load

import (
	"math"
	"testing"
)

func TestPairedRatio(t *testing.T) {
	// after is 2x before in every round, with drift: the ratio is exact.
	r := PairedRatio([]float64{100, 110, 120, 130}, []float64{200, 220, 240, 260})
	if math.Abs(r.Estimate-2) > 1e-9 || math.Abs(r.Low-2) > 1e-9 || r.Direction(0) != 1 {
		t.Errorf("constant 2x: %v", r)
	}
	// Noise around no change: the interval holds 1.
	r = PairedRatio([]float64{100, 100, 100, 100, 100}, []float64{103, 97, 101, 99, 100})
	if r.Direction(0) != 0 || r.Low >= 1 || r.High <= 1 {
		t.Errorf("noise: %v", r)
	}
	// Log ratios 0.1, 0.2, 0.3: mean 0.2, sd 0.1, se 0.0577, t(2) = 4.303.
	r = PairedRatio([]float64{1, 1, 1}, []float64{math.Exp(0.1), math.Exp(0.2), math.Exp(0.3)})
	half := 4.303 * 0.1 / math.Sqrt(3)
	if math.Abs(r.Low-math.Exp(0.2-half)) > 1e-9 || math.Abs(r.High-math.Exp(0.2+half)) > 1e-9 {
		t.Errorf("t interval: %v, want [%g, %g]", r, math.Exp(0.2-half), math.Exp(0.2+half))
	}
	if r.Direction(0) != 0 { // 0.2 - 0.248 < 0: not significant with 3 rounds
		t.Errorf("3 rounds, sd 0.1: %v should not be significant", r)
	}
	// A small significant change is ignored below minChange.
	r = PairedRatio([]float64{100, 100, 100}, []float64{98, 98.1, 97.9})
	if r.Direction(0) != -1 || r.Direction(0.05) != 0 {
		t.Errorf("2%% drop: %v, direction %d / %d", r, r.Direction(0), r.Direction(0.05))
	}
	if r := PairedRatio([]float64{1}, []float64{2}); r.Direction(0) != 0 {
		t.Errorf("one round must not be significant: %v", r)
	}
	if r := PairedRatio([]float64{0, 0}, []float64{1, 1}); r.N != 0 || r.String() != "n/a" {
		t.Errorf("zero figures: %v", r)
	}
}

func TestUnpairedRatio(t *testing.T) {
	// Logs 0, 0.1, 0.2 against 0.3, 0.4, 0.5: difference 0.3, variances
	// 0.01 each, se sqrt(0.01/3*2) = 0.0816, Welch df = 4, t(4) = 2.776.
	b := []float64{1, math.Exp(0.1), math.Exp(0.2)}
	a := []float64{math.Exp(0.3), math.Exp(0.4), math.Exp(0.5)}
	r := UnpairedRatio(b, a)
	half := 2.776 * math.Sqrt(0.02/3)
	if math.Abs(r.Estimate-math.Exp(0.3)) > 1e-9 || math.Abs(r.Low-math.Exp(0.3-half)) > 1e-9 || math.Abs(r.High-math.Exp(0.3+half)) > 1e-9 {
		t.Errorf("Welch interval: %v, want %g [%g, %g]", r, math.Exp(0.3), math.Exp(0.3-half), math.Exp(0.3+half))
	}
	if r.Direction(0) != 1 {
		t.Errorf("a 35%% rise over tight runs must be significant: %v", r)
	}
	// The same runs on both sides, shuffled: no change.
	if r := UnpairedRatio(b, []float64{b[2], b[0], b[1]}); r.Direction(0) != 0 || math.Abs(r.Estimate-1) > 1e-9 {
		t.Errorf("same runs: %v", r)
	}
	if r := UnpairedRatio([]float64{5}, []float64{6, 7}); r.Direction(0) != 0 || !math.IsInf(r.High, 1) {
		t.Errorf("one run on a side must have no interval: %v", r)
	}
}
