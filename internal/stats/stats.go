// Package stats holds the small descriptive statistics more than one
// package needs: verify's intervals and the history's regression noise.
package stats

// MeanVariance is the mean of xs and their sample variance (n − 1 in the
// denominator, so an estimate of the population's from a few runs; 0 for a
// single value). Both are 0 for no values.
func MeanVariance(xs []float64) (mean, variance float64) {
	if len(xs) == 0 {
		return 0, 0
	}
	for _, x := range xs {
		mean += x
	}
	mean /= float64(len(xs))
	if len(xs) < 2 {
		return mean, 0
	}
	for _, x := range xs {
		variance += (x - mean) * (x - mean)
	}
	return mean, variance / float64(len(xs)-1)
}
