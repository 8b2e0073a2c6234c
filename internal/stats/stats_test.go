package stats

import (
	"math"
	"testing"
)

func TestMeanVariance(t *testing.T) {
	for _, c := range []struct {
		xs             []float64
		mean, variance float64
	}{
		{nil, 0, 0},
		{[]float64{3}, 3, 0},
		{[]float64{2, 4}, 3, 2},
		// The textbook's eight values: population variance 4, sample 32/7.
		{[]float64{2, 4, 4, 4, 5, 5, 7, 9}, 5, 32.0 / 7},
	} {
		m, v := MeanVariance(c.xs)
		if math.Abs(m-c.mean) > 1e-12 || math.Abs(v-c.variance) > 1e-12 {
			t.Errorf("MeanVariance(%v) = %v, %v; want %v, %v", c.xs, m, v, c.mean, c.variance)
		}
	}
}
