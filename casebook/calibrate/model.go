package calibrate

import (
	"fmt"
	"math"
	"slices"
)

// The model. A finding's impact s on the resource "cpu" is the share of the
// service's CPU time its fix removes, so the fix is expected to leave
//
//	CPU per request × (1 − s).
//
// Throughput follows when the service is CPU-bound: 1/(1 − s) when it has
// the CPUs to itself. Here the load generator shares the machine with it, so
// a request costs the service c and the generator g of CPU, and a saturated
// machine serves in proportion to 1/(c + g):
//
//	throughput × (c + g) / (c·(1 − s) + g).
//
// A finding on "latency" (a share s of the request path's wall time spent
// waiting: fsync, disk, downstream calls) predicts the closed loop's
// throughput, N connections / latency: × 1/(1 − s), and nothing about CPU.
// A finding on "memory" (shares of allocated bytes or of the heap), or a
// growing cost against a limit (ports, leaked goroutines), predicts no speed
// at all: it is reported, not scored. Predict says which share s is used.
//
// Where the load is not CPU-bound (a paced or waiting service, or a variant
// that burns idle CPU, such as GOMAXPROCS far above the CPUs spinning in the
// scheduler), throughput follows neither formula; CPU per request still
// does, which is why the calibration scores both.

// Kinds of prediction.
const (
	KindCPU      = "cpu"      // CPU per request and throughput
	KindLatency  = "latency"  // throughput only
	KindMemory   = "memory"   // not scored
	KindCapacity = "capacity" // a growing cost against a limit (ports): not scored
	KindControl  = "control"  // same code on both sides: nothing to gain
	KindMissed   = "missed"   // the top finding is not the case's class
)

// Prediction is what the model expects the fix to do, as fixed/bad ratios
// (0 where it predicts nothing).
type Prediction struct {
	Kind  string
	Share float64 // s
	// CPU is the predicted CPU per request; Throughput on this machine (the
	// generator sharing the CPUs), Dedicated with the CPUs to the service.
	CPU, Throughput, Dedicated float64
	// CPURange and ThroughputRange are the same for the least and the most
	// the finding says its fix recovers (its impact range, with the same
	// symptoms and other fixes added): the measured ratio should lie in them.
	CPURange, ThroughputRange [2]float64
}

// Predict applies the model to the bad variant's findings. The share s is
// the top finding's impact plus the impacts of the CPU symptoms it explains (fixing a cause removes its symptoms: the GC its
// allocations drive), plus the same for each other problem the fixed
// variant fixes (serve.Case.AlsoTop3).
func Predict(r *Result) Prediction {
	top := r.Top()
	switch {
	case r.Class == "":
		return Prediction{Kind: KindControl, CPU: 1, Throughput: 1, Dedicated: 1}
	case top == nil || top.Class != r.Class:
		return Prediction{Kind: KindMissed}
	case top.Growing:
		return Prediction{Kind: KindCapacity}
	}
	s := withSymptoms(r.Findings, *top)
	for _, class := range r.AlsoFixed {
		for _, f := range r.Findings {
			if f.Class == class && f.CausedBy == "" && f.Resource == top.Resource {
				s += withSymptoms(r.Findings, f)
				break
			}
		}
	}
	extra := s - top.Impact // symptoms and the other problems fixed
	lo, hi := top.Impact, top.Impact
	if rg := top.ImpactRange; rg != nil {
		lo, hi = rg[0], rg[1]
	}
	s = min(s, 0.99)
	sLo, sHi := min(lo+extra, 0.99), min(hi+extra, 0.99)
	if top.RemovesWork {
		sHi = 1 // a floor and no top: all of the work may go
	}
	p := Prediction{Share: s}
	switch top.Resource {
	case "cpu":
		tput := func(s float64) float64 {
			if c, g := r.BadCPU, r.GeneratorCPU; c > 0 && g > 0 {
				return (c + g) / (c*(1-s) + g)
			}
			return 1 / (1 - s)
		}
		p.Kind, p.CPU, p.Dedicated = KindCPU, 1-s, 1/(1-s)
		p.Throughput = tput(s)
		p.CPURange = [2]float64{1 - sHi, 1 - sLo}
		p.ThroughputRange = [2]float64{tput(sLo), tput(sHi)}
	case "latency":
		p.Kind, p.Throughput, p.Dedicated = KindLatency, 1/(1-s), 1/(1-s)
		p.ThroughputRange = [2]float64{1 / (1 - sLo), 1 / (1 - sHi)}
	default:
		p.Kind = KindMemory
	}
	return p
}

// inRange reports whether the measured ratio lies in the stated range.
func inRange(measured float64, rg [2]float64) bool {
	const slack = 1e-9
	return rg[0]-slack <= measured && measured <= rg[1]+slack
}

// withSymptoms is f's impact plus, for CPU, those of the CPU findings it
// explains: the engine gives each CPU sample one owner, so they add up.
// Waits do not: a lock queue behind an fsync is the same wall time seen
// twice.
func withSymptoms(fs []Finding, f Finding) float64 {
	s := f.Impact
	for _, g := range fs {
		if f.Resource == "cpu" && g.CausedBy == f.ID && g.Resource == "cpu" {
			s += g.Impact
		}
	}
	return s
}

// Errors are a case's prediction errors, positive where the fix gained more
// than predicted: as log ratios of the gains, ln(measured gain / predicted
// gain) with a gain of bad/fixed CPU per request or fixed/bad throughput
// (+0.10: about 10% more), and for CPU also in percentage points of the
// saving (measured 1 − ratio minus predicted s). NaN where nothing is
// scored.
type Errors struct {
	CPULog, CPUPoints, ThroughputLog float64
}

// Score compares the prediction with the measurement.
func Score(r *Result, p Prediction) Errors {
	e := Errors{math.NaN(), math.NaN(), math.NaN()}
	if p.CPU > 0 && r.CPU != nil {
		e.CPULog = math.Log(p.CPU / r.CPU.Ratio)
		e.CPUPoints = 100 * ((1 - r.CPU.Ratio) - (1 - p.CPU))
	}
	if p.Throughput > 0 && r.Throughput != nil {
		e.ThroughputLog = math.Log(r.Throughput.Ratio / p.Throughput)
	}
	return e
}

// Summary is the calibration over the scored cases: median absolute and
// median signed errors (the bias: positive, the estimates are low), and how
// many predictions fell inside the measured 95% interval.
type Summary struct {
	CPUCases, ThroughputCases int
	CPUPoints, CPULog         float64 // median |error|
	ThroughputLog             float64 // median |error|
	CPUBias, ThroughputBias   float64 // median error: points, log
	CPULogBias                float64 // median error of CPU per request, log
	CPUInside, TputInside     int     // predictions inside the measured interval
	// CPUInRange and TputInRange count the measured ratios inside the
	// range the finding states.
	CPUInRange, TputInRange int
}

// Summarize scores every result that has a prediction.
func Summarize(results []*Result) Summary {
	var s Summary
	var pts, clog, tlog, cbias, clogBias, tbias []float64
	for _, r := range results {
		p := Predict(r)
		if p.Kind != KindCPU && p.Kind != KindLatency {
			continue
		}
		e := Score(r, p)
		if !math.IsNaN(e.CPULog) {
			pts, clog = append(pts, math.Abs(e.CPUPoints)), append(clog, math.Abs(e.CPULog))
			cbias, clogBias = append(cbias, e.CPUPoints), append(clogBias, e.CPULog)
			if r.CPU.Low <= p.CPU && p.CPU <= r.CPU.High {
				s.CPUInside++
			}
			if inRange(r.CPU.Ratio, p.CPURange) {
				s.CPUInRange++
			}
		}
		if !math.IsNaN(e.ThroughputLog) {
			tlog, tbias = append(tlog, math.Abs(e.ThroughputLog)), append(tbias, e.ThroughputLog)
			if r.Throughput.Low <= p.Throughput && p.Throughput <= r.Throughput.High {
				s.TputInside++
			}
			if inRange(r.Throughput.Ratio, p.ThroughputRange) {
				s.TputInRange++
			}
		}
	}
	s.CPUCases, s.ThroughputCases = len(clog), len(tlog)
	s.CPUPoints, s.CPULog, s.ThroughputLog = median(pts), median(clog), median(tlog)
	s.CPUBias, s.CPULogBias, s.ThroughputBias = median(cbias), median(clogBias), median(tbias)
	return s
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	xs = slices.Clone(xs)
	slices.Sort(xs)
	n := len(xs)
	if n%2 == 1 {
		return xs[n/2]
	}
	return (xs[n/2-1] + xs[n/2]) / 2
}

// Line is a one-line account of a result, for progress logs.
func Line(r *Result) string {
	if r.Err != "" {
		return "error: " + r.Err
	}
	top := "-"
	if t := r.Top(); t != nil {
		top = fmt.Sprintf("%s %.0f%% of %s", t.Class, 100*t.Impact, t.Resource)
	}
	p := Predict(r)
	return fmt.Sprintf("top %s; predicted cpu %s tput %s; measured cpu %s tput %s", top,
		ratio(p.CPU), ratio(p.Throughput), r.CPU.String(), r.Throughput.String())
}

func ratio(x float64) string {
	if x <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.2fx", x)
}

func (f *Figure) String() string {
	if f == nil {
		return "-"
	}
	return fmt.Sprintf("%.2fx [%.2f, %.2f]", f.Ratio, f.Low, f.High)
}
