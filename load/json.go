package load

import (
	"encoding/json"
	"time"
)

// ms converts a duration to float milliseconds for JSON.
func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func fromMS(v float64) time.Duration { return time.Duration(v * float64(time.Millisecond)) }

type percentilesJSON struct {
	P50   float64 `json:"p50_ms"`
	P75   float64 `json:"p75_ms"`
	P90   float64 `json:"p90_ms"`
	P95   float64 `json:"p95_ms"`
	P99   float64 `json:"p99_ms"`
	P999  float64 `json:"p999_ms"`
	P9999 float64 `json:"p9999_ms"`
	Max   float64 `json:"max_ms"`
	Mean  float64 `json:"mean_ms"`
}

// MarshalJSON writes durations as float milliseconds (p50_ms, ...).
func (p Percentiles) MarshalJSON() ([]byte, error) {
	return json.Marshal(percentilesJSON{ms(p.P50), ms(p.P75), ms(p.P90), ms(p.P95), ms(p.P99), ms(p.P999), ms(p.P9999), ms(p.Max), ms(p.Mean)})
}

// UnmarshalJSON reads the form written by MarshalJSON.
func (p *Percentiles) UnmarshalJSON(b []byte) error {
	var j percentilesJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*p = Percentiles{fromMS(j.P50), fromMS(j.P75), fromMS(j.P90), fromMS(j.P95), fromMS(j.P99), fromMS(j.P999), fromMS(j.P9999), fromMS(j.Max), fromMS(j.Mean)}
	return nil
}

type quantileJSON struct {
	Percentile float64 `json:"percentile"`
	MS         float64 `json:"ms"`
}

func (q Quantile) MarshalJSON() ([]byte, error) {
	return json.Marshal(quantileJSON{q.Percentile, ms(q.Value)})
}

func (q *Quantile) UnmarshalJSON(b []byte) error {
	var j quantileJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*q = Quantile{j.Percentile, fromMS(j.MS)}
	return nil
}

type secondJSON struct {
	T      int     `json:"t"`
	OK     int64   `json:"ok"`
	Errors int64   `json:"errors"`
	P50    float64 `json:"p50_ms"`
	P99    float64 `json:"p99_ms"`
	Max    float64 `json:"max_ms"`
}

func (s Second) MarshalJSON() ([]byte, error) {
	return json.Marshal(secondJSON{s.T, s.OK, s.Errors, ms(s.P50), ms(s.P99), ms(s.Max)})
}

func (s *Second) UnmarshalJSON(b []byte) error {
	var j secondJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*s = Second{j.T, j.OK, j.Errors, fromMS(j.P50), fromMS(j.P99), fromMS(j.Max)}
	return nil
}

// resultJSON is load.json, the form bundles and `load --format json` carry.
type resultJSON struct {
	URL          string           `json:"url"`
	Mode         string           `json:"mode"`
	Concurrency  int              `json:"concurrency"`
	Rate         float64          `json:"rate,omitempty"`
	Duration     float64          `json:"duration_ms"`
	Requests     int64            `json:"requests"`
	Errors       int64            `json:"errors"`
	ErrorsByKind map[string]int64 `json:"errors_by_kind,omitempty"`
	Throughput   float64          `json:"throughput_rps"`
	Latency      Percentiles      `json:"latency"`
	Service      Percentiles      `json:"service"`
	Table        []Quantile       `json:"percentiles,omitempty"`
	LateSends    int64            `json:"late_sends"`
	Dropped      int64            `json:"dropped_sends"`
	Unfinished   int64            `json:"unfinished"`
	Timeline     []Second         `json:"timeline,omitempty"`
	GeneratorCPU float64          `json:"generator_cpu"`
	LoadAverage  float64          `json:"load_average"`
	Warnings     []string         `json:"warnings,omitempty"`
	Interrupted  bool             `json:"interrupted,omitempty"`
}

// MarshalJSON writes Duration as duration_ms and latencies as *_ms fields.
func (r Result) MarshalJSON() ([]byte, error) {
	return json.Marshal(resultJSON{r.URL, r.Mode, r.Concurrency, r.Rate, ms(r.Duration), r.Requests, r.Errors,
		r.ErrorsByKind, r.Throughput, r.Latency, r.Service, r.Table, r.LateSends, r.Dropped, r.Unfinished,
		r.Timeline, r.GeneratorCPU, r.LoadAverage, r.Warnings, r.Interrupted})
}

// UnmarshalJSON reads the form written by MarshalJSON.
func (r *Result) UnmarshalJSON(b []byte) error {
	var j resultJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*r = Result{URL: j.URL, Mode: j.Mode, Concurrency: j.Concurrency, Rate: j.Rate, Duration: fromMS(j.Duration),
		Requests: j.Requests, Errors: j.Errors, ErrorsByKind: j.ErrorsByKind, Throughput: j.Throughput,
		Latency: j.Latency, Service: j.Service, Table: j.Table, LateSends: j.LateSends, Dropped: j.Dropped,
		Unfinished: j.Unfinished, Timeline: j.Timeline, GeneratorCPU: j.GeneratorCPU, LoadAverage: j.LoadAverage, Warnings: j.Warnings,
		Interrupted: j.Interrupted}
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
