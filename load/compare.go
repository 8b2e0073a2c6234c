package load

import (
	"fmt"
	"math"

	"github.com/perfdoctor/perfdoctor/internal/stats"
)

// Ratio is after/before for one figure over paired rounds, with a 95%
// confidence interval.
//
// Method: each round measures before and after back to back (in alternating
// order), so the pair shares the machine's state at that time. The per-round
// log ratio ln(after/before) cancels slow drift; its mean and standard error
// give a Student t interval with n-1 degrees of freedom (a paired t-test on
// log ratios), exponentiated back into a ratio. With 5 rounds the interval
// is mean ± 2.776 standard errors: wide unless the rounds agree, which is
// the honest answer from few rounds.
type Ratio struct {
	Estimate, Low, High float64
	N                   int
}

// PairedRatio computes after/before from per-round figures. Rounds with a
// non-positive figure on either side are skipped (no ratio exists).
func PairedRatio(before, after []float64) Ratio {
	var logs []float64
	for i := range min(len(before), len(after)) {
		if before[i] > 0 && after[i] > 0 {
			logs = append(logs, math.Log(after[i]/before[i]))
		}
	}
	r := Ratio{N: len(logs)}
	if len(logs) == 0 {
		return r
	}
	mean, variance := stats.MeanVariance(logs)
	r.Estimate = math.Exp(mean)
	if len(logs) < 2 {
		r.Low, r.High = 0, math.Inf(1) // one round proves nothing
		return r
	}
	se := math.Sqrt(variance) / math.Sqrt(float64(len(logs)))
	half := tQuantile975(len(logs)-1) * se
	r.Low, r.High = math.Exp(mean-half), math.Exp(mean+half)
	return r
}

// UnpairedRatio computes after/before from two independent samples (the
// runs of a benchmark on each side, which share no rounds): Welch's t-test
// on the log figures, its interval exponentiated back into a ratio. The
// degrees of freedom (Welch-Satterthwaite) are rounded down, which widens
// the interval slightly, never narrows it. Non-positive figures are
// skipped; fewer than two on a side give no interval.
func UnpairedRatio(before, after []float64) Ratio {
	logs := func(xs []float64) (out []float64) {
		for _, x := range xs {
			if x > 0 {
				out = append(out, math.Log(x))
			}
		}
		return out
	}
	lb, la := logs(before), logs(after)
	r := Ratio{N: min(len(lb), len(la))}
	if r.N == 0 {
		return r
	}
	mb, vb := stats.MeanVariance(lb)
	ma, va := stats.MeanVariance(la)
	r.Estimate = math.Exp(ma - mb)
	if r.N < 2 {
		r.Low, r.High = 0, math.Inf(1)
		return r
	}
	sb, sa := vb/float64(len(lb)), va/float64(len(la))
	se := math.Sqrt(sb + sa)
	if se == 0 {
		r.Low, r.High = r.Estimate, r.Estimate
		return r
	}
	df := (sb + sa) * (sb + sa) / (sb*sb/float64(len(lb)-1) + sa*sa/float64(len(la)-1))
	half := tQuantile975(int(df)) * se
	r.Low, r.High = math.Exp(ma-mb-half), math.Exp(ma-mb+half)
	return r
}

// Direction of a significant change: +1 the figure rose, -1 it fell, 0 the
// interval holds 1 (or the change is smaller than minChange, a fraction).
func (r Ratio) Direction(minChange float64) int {
	switch {
	case r.N >= 2 && r.Low > 1 && r.Estimate-1 > minChange:
		return 1
	case r.N >= 2 && r.High < 1 && 1-r.Estimate > minChange:
		return -1
	}
	return 0
}

func (r Ratio) String() string {
	if r.N == 0 {
		return "n/a"
	}
	if r.N < 2 {
		return fmt.Sprintf("%.3fx (one round: no interval)", r.Estimate)
	}
	return fmt.Sprintf("%.3fx [%.3f, %.3f]", r.Estimate, r.Low, r.High)
}

// tQuantile975 is Student's t 97.5% quantile for df degrees of freedom
// (two-sided 95%). Beyond 30 it stays at the df=30 value, slightly wider
// than the exact figure, never narrower.
func tQuantile975(df int) float64 {
	table := []float64{12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
		2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
		2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042}
	if df < 1 {
		return math.Inf(1)
	}
	return table[min(df, len(table))-1]
}
