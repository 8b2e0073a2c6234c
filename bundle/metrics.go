package bundle

import (
	"math"
	"time"
)

// MetricsPath is where the agent package serves RuntimeMetrics as JSON on
// its own listener; collect reads it when a target serves it.
const MetricsPath = "/debug/perfdoctor/metrics"

// RuntimeMetrics is a snapshot of runtime/metrics (all of them) plus the
// settings the runtime does not expose there, as the agent serves it.
type RuntimeMetrics struct {
	Time time.Time `json:"time"`
	// Values holds every scalar metric (uint64 and float64 kinds) by its
	// runtime/metrics name, e.g. "/gc/cycles/total:gc-cycles".
	Values map[string]float64 `json:"values"`
	// Histograms holds every histogram metric, e.g. "/sched/latencies:seconds".
	Histograms map[string]Histogram `json:"histograms,omitempty"`
	GoVersion  string               `json:"go_version,omitempty"`
	GOMAXPROCS int                  `json:"gomaxprocs,omitempty"`
	GOGC       int                  `json:"gogc,omitempty"`       // percent; -1 = off
	GOMEMLIMIT int64                `json:"gomemlimit,omitempty"` // bytes; math.MaxInt64 = none
	// Build is the program's build information (the agent reads its own),
	// which is how a remote target reveals it.
	Build *BuildInfo `json:"build,omitempty"`
}

// Histogram is a runtime/metrics Float64Histogram. Buckets are the
// len(Counts)+1 boundaries; infinite boundaries are written as ±MaxFloat64,
// since JSON has no infinity.
type Histogram struct {
	Buckets []float64 `json:"buckets"`
	Counts  []uint64  `json:"counts"`
}

// Quantile estimates the q-quantile (0..1) as the upper boundary of the
// bucket that holds it, the conservative reading for latencies.
func (h Histogram) Quantile(q float64) float64 {
	var total uint64
	for _, c := range h.Counts {
		total += c
	}
	if total == 0 || len(h.Buckets) != len(h.Counts)+1 {
		return 0
	}
	rank := uint64(math.Ceil(q * float64(total)))
	var seen uint64
	for i, c := range h.Counts {
		seen += c
		if seen >= rank {
			upper := h.Buckets[i+1]
			if upper >= math.MaxFloat64 {
				return h.Buckets[i]
			}
			return upper
		}
	}
	return h.Buckets[len(h.Buckets)-1]
}

// Sub returns the counts observed between an earlier snapshot and h.
func (h Histogram) Sub(earlier Histogram) Histogram {
	out := Histogram{Buckets: h.Buckets, Counts: make([]uint64, len(h.Counts))}
	for i, c := range h.Counts {
		if i < len(earlier.Counts) && earlier.Counts[i] <= c {
			c -= earlier.Counts[i]
		}
		out.Counts[i] = c
	}
	return out
}
