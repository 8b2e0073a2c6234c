package report

import (
	"fmt"
	"sort"
	"strings"

	"github.com/perfdoctor/perfdoctor/bundle"
	"github.com/perfdoctor/perfdoctor/internal/human"
)

// LoadFigures are the load generator's results (bundle.LoadResult, from
// load.json) as reports show them next to the findings.
type LoadFigures struct {
	URL          string           `json:"url"`
	Mode         string           `json:"mode,omitempty"` // "closed" or "open"
	Concurrency  int              `json:"concurrency"`
	Rate         float64          `json:"rate,omitempty"`
	DurationMS   float64          `json:"duration_ms"`
	Requests     int64            `json:"requests"`
	Errors       int64            `json:"errors"`
	ErrorsByKind map[string]int64 `json:"errors_by_kind,omitempty"`
	Throughput   float64          `json:"throughput_rps"`
	Latency      LoadLatency      `json:"latency"`
	Service      *LoadLatency     `json:"service,omitempty"`
	LateSends    int64            `json:"late_sends"`
	Dropped      int64            `json:"dropped_sends"`
	Timeline     []LoadSecond     `json:"timeline,omitempty"`
	Warnings     []string         `json:"warnings,omitempty"`
	Interrupted  bool             `json:"interrupted,omitempty"`
}

// LoadLatency is a latency summary in milliseconds.
type LoadLatency struct {
	P50  float64 `json:"p50_ms"`
	P90  float64 `json:"p90_ms"`
	P99  float64 `json:"p99_ms"`
	P999 float64 `json:"p999_ms"`
	Max  float64 `json:"max_ms"`
	Mean float64 `json:"mean_ms"`
}

// LoadSecond is one second of the load timeline, by completion time.
type LoadSecond struct {
	T      int     `json:"t"`
	OK     int64   `json:"ok"`
	Errors int64   `json:"errors"`
	P50    float64 `json:"p50_ms"`
	P99    float64 `json:"p99_ms"`
	Max    float64 `json:"max_ms"`
}

// loadFigures is the part of the load results (load.json, parsed by the
// evidence) that reports show; nil without load.
func loadFigures(l *bundle.LoadResult) *LoadFigures {
	if l == nil {
		return nil
	}
	lat := func(p bundle.LoadPercentiles) LoadLatency {
		return LoadLatency{P50: p.P50, P90: p.P90, P99: p.P99, P999: p.P999, Max: p.Max, Mean: p.Mean}
	}
	f := &LoadFigures{URL: l.URL, Mode: l.Mode, Concurrency: l.Concurrency, Rate: l.Rate, DurationMS: l.DurationMS,
		Requests: l.Requests, Errors: l.Errors, ErrorsByKind: l.ErrorsByKind, Throughput: l.Throughput,
		Latency: lat(l.Latency), LateSends: l.LateSends, Dropped: l.Dropped, Warnings: l.Warnings, Interrupted: l.Interrupted}
	if l.Mode == "open" { // closed loop: the same as Latency
		s := lat(l.Service)
		f.Service = &s
	}
	for _, s := range l.Timeline {
		f.Timeline = append(f.Timeline, LoadSecond(s))
	}
	return f
}

// errorKinds is "kind=n, ..." sorted by kind.
func (l *LoadFigures) errorKinds() string {
	kinds := make([]string, 0, len(l.ErrorsByKind))
	for k, n := range l.ErrorsByKind {
		kinds = append(kinds, fmt.Sprintf("%s=%d", k, n))
	}
	sort.Strings(kinds)
	return strings.Join(kinds, ", ")
}

// describeLoad is the one-line summary for text and Markdown.
func describeLoad(l *LoadFigures) string {
	var b strings.Builder
	if l.Mode == "open" {
		fmt.Fprintf(&b, "open loop at %g req/s", l.Rate)
	} else {
		fmt.Fprintf(&b, "closed loop, %d connections", l.Concurrency)
	}
	fmt.Fprintf(&b, ", %.1f req/s over %.0fs, latency p50 %s p99 %s p99.9 %s max %s", l.Throughput, l.DurationMS/1000,
		human.Millis(l.Latency.P50), human.Millis(l.Latency.P99), human.Millis(l.Latency.P999), human.Millis(l.Latency.Max))
	if l.Service != nil {
		fmt.Fprintf(&b, " (from the due time; service p99 %s; %d late, %d never sent)", human.Millis(l.Service.P99), l.LateSends, l.Dropped)
	}
	fmt.Fprintf(&b, ", %d errors", l.Errors)
	if l.Errors > 0 {
		b.WriteString(" (" + l.errorKinds() + ")")
	}
	if l.Interrupted {
		b.WriteString(", interrupted")
	}
	return b.String()
}
