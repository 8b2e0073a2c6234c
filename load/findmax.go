package load

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Objective is a service-level objective for the capacity search: a latency
// percentile under a limit and an error share under a limit.
type Objective struct {
	Percentile float64       // e.g. 99
	Limit      time.Duration // e.g. 200ms
	MaxErrors  float64       // share of requests, e.g. 0.01
	text       string
}

func (o Objective) String() string { return o.text }

// ParseObjective reads "p99<200ms" or "p99.9<50ms,errors<0.1%". Without an
// errors clause at most 1% of requests may fail.
func ParseObjective(s string) (Objective, error) {
	o := Objective{MaxErrors: 0.01, text: s}
	bad := func(why string) (Objective, error) {
		return Objective{}, fmt.Errorf("SLO %q: %s (want e.g. p99<200ms or p99<200ms,errors<1%%)", s, why)
	}
	haveLatency := false
	for _, part := range strings.Split(s, ",") {
		name, limit, ok := strings.Cut(strings.TrimSpace(part), "<")
		if !ok {
			return bad("no '<'")
		}
		name, limit = strings.TrimSpace(name), strings.TrimSpace(limit)
		switch {
		case name == "errors":
			v, err := strconv.ParseFloat(strings.TrimSuffix(limit, "%"), 64)
			if err != nil || !strings.HasSuffix(limit, "%") || v < 0 || v > 100 {
				return bad("errors limit must be a percentage")
			}
			o.MaxErrors = v / 100
		case strings.HasPrefix(name, "p"):
			p, err := strconv.ParseFloat(name[1:], 64)
			if err != nil || p <= 0 || p > 100 {
				return bad("percentile must be in (0, 100]")
			}
			d, err := time.ParseDuration(limit)
			if err != nil || d <= 0 {
				return bad("latency limit must be a positive duration")
			}
			o.Percentile, o.Limit, haveLatency = p, d, true
		default:
			return bad(fmt.Sprintf("unknown term %q", name))
		}
	}
	if !haveLatency {
		return bad("no latency term")
	}
	return o, nil
}

// Step is one rate tried by FindMax.
type Step struct {
	Rate   float64
	Result *Result
	Value  time.Duration // the objective's percentile, corrected latency
	Pass   bool
	Why    string // why it failed
}

// Capacity is the outcome of FindMax.
type Capacity struct {
	Objective Objective
	Steps     []Step
	// Best is the highest rate that met the objective; 0 if none did.
	Best float64
}

// FindMax runs open-loop steps of cfg.Duration each, doubling the rate from
// start until a step fails the objective, then bisecting between the last
// passing and the first failing rate, for at most maxSteps steps. A step
// fails when the corrected latency percentile or the error share exceeds
// the objective, or the server answered less than 95% of the rate.
func FindMax(ctx context.Context, cfg Config, obj Objective, start float64, maxSteps int) (*Capacity, error) {
	if start <= 0 || maxSteps < 1 {
		return nil, fmt.Errorf("load: find-max needs a start rate > 0 and at least one step")
	}
	c := &Capacity{Objective: obj}
	lo, hi := 0.0, 0.0 // highest pass, lowest fail
	rate := start
	progress := cfg.Progress
	for i := 0; i < maxSteps && ctx.Err() == nil; i++ {
		step := cfg
		step.Rate = rate
		res, err := Run(ctx, step)
		if err != nil {
			return c, err
		}
		if res.Interrupted {
			break
		}
		s := judge(obj, rate, res)
		c.Steps = append(c.Steps, s)
		progress.Clear()
		if s.Pass {
			lo = rate
			c.Best = max(c.Best, rate)
		} else {
			hi = rate
		}
		switch {
		case hi == 0:
			rate *= 2
		case lo == 0:
			rate /= 2
		default:
			if (hi-lo)/hi < 0.05 {
				return c, nil
			}
			rate = (lo + hi) / 2
		}
		if rate > MaxRate {
			break
		}
	}
	return c, nil
}

func judge(obj Objective, rate float64, res *Result) Step {
	s := Step{Rate: rate, Result: res, Pass: true, Value: res.latencyAt(obj.Percentile)}
	var why []string
	total := res.Requests + res.Dropped + res.Unfinished
	if total == 0 {
		why = append(why, "no requests completed")
	} else {
		if s.Value > obj.Limit {
			why = append(why, fmt.Sprintf("p%g %s > %s", obj.Percentile, fmtDur(s.Value), obj.Limit))
		}
		// Sends that never started or never finished failed the client.
		if e := float64(res.Errors+res.Dropped+res.Unfinished) / float64(total); e > obj.MaxErrors {
			why = append(why, fmt.Sprintf("errors %.2f%% > %g%%", 100*e, 100*obj.MaxErrors))
		}
		if res.Throughput < 0.95*rate {
			why = append(why, fmt.Sprintf("answered %.0f req/s of %g", res.Throughput, rate))
		}
	}
	if len(why) > 0 {
		s.Pass, s.Why = false, strings.Join(why, "; ")
	}
	return s
}

// latencyAt is the latency percentile p from the full table, taking the
// first row at or above p (conservative between rows).
func (r *Result) latencyAt(p float64) time.Duration {
	for _, q := range r.Table {
		if q.Percentile >= p {
			return q.Value
		}
	}
	return r.Latency.Max
}

// LowestRate is the lowest rate tried, 0 without steps.
func (c *Capacity) LowestRate() float64 {
	low := 0.0
	for _, s := range c.Steps {
		if low == 0 || s.Rate < low {
			low = s.Rate
		}
	}
	return low
}
