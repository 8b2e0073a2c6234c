package report

import (
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"
)

// LoadFigures are the load generator's results (load.json, the JSON form of
// load.Result) as reports show them next to the findings.
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

// readLoadFigures reads load.json; a missing or unreadable file gives nil
// (the report then has no load section, as without load).
func readLoadFigures(path string) *LoadFigures {
	if path == "" {
		return nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	var l LoadFigures
	if json.Unmarshal(b, &l) != nil {
		return nil
	}
	if l.Mode == "open" && l.Service == nil {
		l.Service = &LoadLatency{}
	}
	if l.Mode != "open" {
		l.Service = nil // closed loop: the same as Latency
	}
	return &l
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
		fmtMS(l.Latency.P50), fmtMS(l.Latency.P99), fmtMS(l.Latency.P999), fmtMS(l.Latency.Max))
	if l.Service != nil {
		fmt.Fprintf(&b, " (from the due time; service p99 %s; %d late, %d never sent)", fmtMS(l.Service.P99), l.LateSends, l.Dropped)
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
