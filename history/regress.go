package history

import (
	"math"
	"sort"
	"time"

	"github.com/perfdoctor/perfdoctor/internal/stats"
)

// Noise defaults: a finding regresses when its latest impact exceeds the
// mean of the earlier runs by more than NoiseSigmas standard deviations of
// them, and by at least MinDelta of the resource (so two identical earlier
// runs, with no spread, do not make every wobble a regression).
const (
	DefaultMinDelta = 0.05
	NoiseSigmas     = 3.0
	// Baseline is how many earlier runs make the noise estimate.
	Baseline = 10
)

// Regression is a finding class that grew beyond its noise in a target's
// latest run.
type Regression struct {
	Target    string    `json:"target"`
	Class     string    `json:"class"`
	Rule      string    `json:"rule"`
	At        time.Time `json:"at"`
	Latest    float64   `json:"latest"`    // impact in the latest run
	Mean      float64   `json:"mean"`      // over the earlier runs
	Noise     float64   `json:"noise"`     // standard deviation of the earlier runs
	Threshold float64   `json:"threshold"` // the growth allowed: max(MinDelta, NoiseSigmas x Noise)
	Earlier   int       `json:"earlier_runs"`
	Summary   string    `json:"summary"`
}

// Regressions compares each target's latest run with up to Baseline runs
// before it. A class absent from a run counts as impact 0 there. minDelta
// <= 0 means DefaultMinDelta. Targets with a single run have no baseline
// and are not judged.
func Regressions(runs []Run, minDelta float64) []Regression {
	if minDelta <= 0 {
		minDelta = DefaultMinDelta
	}
	byTarget := map[string][]Run{}
	var targets []string
	for _, r := range runs {
		if _, ok := byTarget[r.Target]; !ok {
			targets = append(targets, r.Target)
		}
		byTarget[r.Target] = append(byTarget[r.Target], r)
	}
	sort.Strings(targets)
	var out []Regression
	for _, t := range targets {
		rs := byTarget[t]
		sort.SliceStable(rs, func(i, j int) bool { return rs[i].At.Before(rs[j].At) })
		if len(rs) < 2 {
			continue
		}
		latest := rs[len(rs)-1]
		earlier := rs[max(0, len(rs)-1-Baseline) : len(rs)-1]
		for _, f := range ClassImpacts(latest) {
			var vals []float64
			for _, r := range earlier {
				vals = append(vals, impactOf(r, f.Class))
			}
			mean, variance := stats.MeanVariance(vals)
			sd := math.Sqrt(variance)
			threshold := math.Max(minDelta, NoiseSigmas*sd)
			if f.Impact-mean > threshold {
				out = append(out, Regression{Target: t, Class: f.Class, Rule: f.Rule, At: latest.At, Latest: f.Impact,
					Mean: mean, Noise: sd, Threshold: threshold, Earlier: len(vals), Summary: f.Summary})
			}
		}
	}
	return out
}

// ClassImpacts is a run's findings with one (the largest) per class.
func ClassImpacts(r Run) []Finding {
	seen := map[string]int{}
	var out []Finding
	for _, f := range r.Findings {
		if i, ok := seen[f.Class]; ok {
			if f.Impact > out[i].Impact {
				out[i] = f
			}
			continue
		}
		seen[f.Class] = len(out)
		out = append(out, f)
	}
	return out
}

func impactOf(r Run, class string) float64 {
	v := 0.0
	for _, f := range r.Findings {
		if f.Class == class && f.Impact > v {
			v = f.Impact
		}
	}
	return v
}
