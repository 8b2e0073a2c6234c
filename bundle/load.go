package bundle

import "time"

// LoadResult is load.json: the load generator's results as a bundle carries
// them (perfdoctor run, demo) and `perfdoctor load --format json` prints
// them. The load package writes it from its Result; the evidence package
// reads it; reports show it. Latencies are float milliseconds.
type LoadResult struct {
	URL string `json:"url"`
	// Method is the HTTP method of every request ("" for UDP and command
	// loads) and BodyBytes the size of each request's body or datagram:
	// what a unit of work carries.
	Method      string  `json:"method,omitempty"`
	BodyBytes   int     `json:"body_bytes,omitempty"`
	Mode        string  `json:"mode"` // "closed" or "open"
	Concurrency int     `json:"concurrency"`
	Rate        float64 `json:"rate,omitempty"`
	// Started is when the load began, the timeline's second 0: the work
	// accounting reads the units done within the collection window from it.
	Started      time.Time        `json:"started,omitzero"`
	DurationMS   float64          `json:"duration_ms"`
	Requests     int64            `json:"requests"`
	Errors       int64            `json:"errors"`
	ErrorsByKind map[string]int64 `json:"errors_by_kind,omitempty"`
	Throughput   float64          `json:"throughput_rps"`
	// Latency counts from the due time in open loop (coordinated omission
	// corrected); Service always from the send.
	Latency      LoadPercentiles `json:"latency"`
	Service      LoadPercentiles `json:"service"`
	Table        []LoadQuantile  `json:"percentiles,omitempty"`
	LateSends    int64           `json:"late_sends"`
	Dropped      int64           `json:"dropped_sends"`
	Unfinished   int64           `json:"unfinished"`
	Timeline     []LoadSecond    `json:"timeline,omitempty"`
	GeneratorCPU float64         `json:"generator_cpu"`
	LoadAverage  float64         `json:"load_average"`
	Warnings     []string        `json:"warnings,omitempty"`
	Interrupted  bool            `json:"interrupted,omitempty"`
	// A command load (mode "command"): the command, what a unit is, the
	// units each run does and the runs completed; requests and errors
	// count units, and latency is not measured.
	Command     string `json:"command,omitempty"`
	Unit        string `json:"unit,omitempty"`
	UnitsPerRun int64  `json:"units_per_run,omitempty"`
	Runs        int64  `json:"runs,omitempty"`
	// Warmup is the same load's warm-up, run just before it while nothing
	// was recorded (perfdoctor run): its rate against the window's is what
	// the recording cost the service.
	Warmup *LoadWarmup `json:"warmup,omitempty"`
}

// LoadWarmup is a warm-up's figures: how long it ran, the units it
// completed and their rate.
type LoadWarmup struct {
	DurationMS float64 `json:"duration_ms"`
	Requests   int64   `json:"requests"`
	Throughput float64 `json:"throughput_rps"`
}

// LoadPercentiles is a latency summary in milliseconds.
type LoadPercentiles struct {
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

// LoadQuantile is one row of the full percentile table.
type LoadQuantile struct {
	Percentile float64 `json:"percentile"`
	MS         float64 `json:"ms"`
}

// LoadSecond is one second of the timeline, by completion time.
type LoadSecond struct {
	T      int     `json:"t"`
	OK     int64   `json:"ok"`
	Errors int64   `json:"errors"`
	P50    float64 `json:"p50_ms"`
	P99    float64 `json:"p99_ms"`
	Max    float64 `json:"max_ms"`
}
