package load

import (
	"encoding/json"
	"strings"
	"time"

	"github.com/perfdoctor/perfdoctor/bundle"
	"github.com/perfdoctor/perfdoctor/internal/redact"
)

// ms converts a duration to float milliseconds for JSON.
func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func fromMS(v float64) time.Duration { return time.Duration(v * float64(time.Millisecond)) }

func (p Percentiles) schema() bundle.LoadPercentiles {
	return bundle.LoadPercentiles{P50: ms(p.P50), P75: ms(p.P75), P90: ms(p.P90), P95: ms(p.P95), P99: ms(p.P99),
		P999: ms(p.P999), P9999: ms(p.P9999), Max: ms(p.Max), Mean: ms(p.Mean)}
}

func percentilesFrom(j bundle.LoadPercentiles) Percentiles {
	return Percentiles{fromMS(j.P50), fromMS(j.P75), fromMS(j.P90), fromMS(j.P95), fromMS(j.P99), fromMS(j.P999), fromMS(j.P9999), fromMS(j.Max), fromMS(j.Mean)}
}

// MarshalJSON writes durations as float milliseconds (p50_ms, ...).
func (p Percentiles) MarshalJSON() ([]byte, error) { return json.Marshal(p.schema()) }

// UnmarshalJSON reads the form written by MarshalJSON.
func (p *Percentiles) UnmarshalJSON(b []byte) error {
	var j bundle.LoadPercentiles
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*p = percentilesFrom(j)
	return nil
}

// Schema is the result in load.json's form, bundle.LoadResult.
func (r *Result) Schema() *bundle.LoadResult {
	j := &bundle.LoadResult{URL: r.URL, Method: r.Method, BodyBytes: r.BodyBytes, Mode: r.Mode, Concurrency: r.Concurrency, Rate: r.Rate, Started: r.Start, DurationMS: ms(r.Duration),
		Requests: r.Requests, Errors: r.Errors, ErrorsByKind: r.ErrorsByKind, Throughput: r.Throughput,
		Latency: r.Latency.schema(), Service: r.Service.schema(), LateSends: r.LateSends, Dropped: r.Dropped,
		Unfinished: r.Unfinished, GeneratorCPU: r.GeneratorCPU, LoadAverage: r.LoadAverage, Warnings: r.Warnings,
		Interrupted: r.Interrupted, Command: redactCommand(r.Command), Unit: r.Unit, UnitsPerRun: r.UnitsPerRun, Runs: r.Runs, Warmup: r.Warmup}
	for _, q := range r.Table {
		j.Table = append(j.Table, bundle.LoadQuantile{Percentile: q.Percentile, MS: ms(q.Value)})
	}
	for _, s := range r.Timeline {
		j.Timeline = append(j.Timeline, bundle.LoadSecond{T: s.T, OK: s.OK, Errors: s.Errors, P50: ms(s.P50), P99: ms(s.P99), Max: ms(s.Max)})
	}
	return j
}

// WarmupSummary is the result as a warm-up's figures, kept beside the run
// it warmed (LoadResult.Warmup).
func (r *Result) WarmupSummary() *bundle.LoadWarmup {
	return &bundle.LoadWarmup{DurationMS: ms(r.Duration), Requests: r.Requests, Throughput: r.Throughput}
}

// FromSchema is the result load.json describes.
func FromSchema(j *bundle.LoadResult) *Result {
	r := &Result{URL: j.URL, Method: j.Method, BodyBytes: j.BodyBytes, Mode: j.Mode, Concurrency: j.Concurrency, Rate: j.Rate, Start: j.Started, Duration: fromMS(j.DurationMS),
		Requests: j.Requests, Errors: j.Errors, ErrorsByKind: j.ErrorsByKind, Throughput: j.Throughput,
		Latency: percentilesFrom(j.Latency), Service: percentilesFrom(j.Service), LateSends: j.LateSends, Dropped: j.Dropped,
		Unfinished: j.Unfinished, GeneratorCPU: j.GeneratorCPU, LoadAverage: j.LoadAverage, Warnings: j.Warnings,
		Interrupted: j.Interrupted, Command: j.Command, Unit: j.Unit, UnitsPerRun: j.UnitsPerRun, Runs: j.Runs, Warmup: j.Warmup}
	for _, q := range j.Table {
		r.Table = append(r.Table, Quantile{q.Percentile, fromMS(q.MS)})
	}
	for _, s := range j.Timeline {
		r.Timeline = append(r.Timeline, Second{s.T, s.OK, s.Errors, fromMS(s.P50), fromMS(s.P99), fromMS(s.Max)})
	}
	return r
}

// MarshalJSON writes the result as load.json (bundle.LoadResult).
func (r Result) MarshalJSON() ([]byte, error) { return json.Marshal(r.Schema()) }

// UnmarshalJSON reads load.json.
func (r *Result) UnmarshalJSON(b []byte) error {
	var j bundle.LoadResult
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*r = *FromSchema(&j)
	return nil
}

type stepJSON struct {
	Rate   float64 `json:"rate"`
	Value  float64 `json:"objective_ms"`
	Pass   bool    `json:"pass"`
	Why    string  `json:"why,omitempty"`
	Result *Result `json:"result"`
}

// MarshalJSON writes the search as `load --find-max --format json` shows it:
// the objective, the best rate and each step with its objective figure in ms.
func (c *Capacity) MarshalJSON() ([]byte, error) {
	steps := make([]stepJSON, 0, len(c.Steps))
	for _, s := range c.Steps {
		steps = append(steps, stepJSON{s.Rate, ms(s.Value), s.Pass, s.Why, s.Result})
	}
	return json.Marshal(struct {
		Objective string     `json:"objective"`
		Best      float64    `json:"best_rate"`
		Steps     []stepJSON `json:"steps"`
	}{c.Objective.String(), c.Best, steps})
}

// redactCommand is a load command as load.json keeps it: a benchmark's
// command line may carry a password (pgbench's connection string, redis's
// -a), which a bundle must not.
func redactCommand(command string) string {
	if command == "" {
		return ""
	}
	return redact.Args(strings.Fields(command))
}
