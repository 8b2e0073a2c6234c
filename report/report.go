// Package report renders a diagnosis (findings plus a summary of the
// evidence behind them) as text for terminals, JSON for machines, a
// self-contained HTML page with flame graphs for people, Markdown for pull
// requests and SARIF for code-scanning tools; it also compares two profiles
// (Diff). It decides nothing: ranking and wording come from the rules.
package report

import (
	"fmt"
	"io"
	"sort"
	"time"

	"github.com/perfdoctor/perfdoctor/evidence"
	"github.com/perfdoctor/perfdoctor/rules"
)

// SchemaVersion is the version of the JSON document; see docs/schema.md.
const SchemaVersion = 1

// Report is the document every format renders.
type Report struct {
	SchemaVersion int                `json:"schema_version"`
	Tool          string             `json:"tool"`
	Findings      []rules.Finding    `json:"findings"`
	NotChecked    []rules.NotChecked `json:"not_checked"`
	Inputs        Inputs             `json:"inputs"`
	// Load is the load that ran while the evidence was collected (perfdoctor
	// run, demo), when the evidence has load.json.
	Load *LoadFigures `json:"load,omitempty"`

	// Evidence is what the report was made from. The HTML report draws its
	// flame graphs, GC and load figures from it; other formats ignore it,
	// and a Report built by hand may leave it nil.
	Evidence *evidence.Evidence `json:"-"`
}

// Inputs summarises the evidence the diagnosis read.
type Inputs struct {
	Sources       []string        `json:"sources"`
	Target        string          `json:"target,omitempty"`
	Profiles      []string        `json:"profiles"`
	CPUSamples    int64           `json:"cpu_samples"`
	WindowSeconds float64         `json:"window_seconds"`
	Metrics       bool            `json:"metrics"`
	System        bool            `json:"system"`
	Trace         bool            `json:"trace"`
	Load          bool            `json:"load"`
	Partial       bool            `json:"partial"`
	Failed        []FailedItem    `json:"failed"`
	Skipped       []evidence.File `json:"skipped"`
	// Caveats are files that were used but read in part (a trace or gzip
	// stream cut short) or with an assumption (folded counts taken as time).
	Caveats []evidence.File `json:"caveats,omitempty"`
	// Warnings say plainly when the evidence is too thin for the rules,
	// and what to do about it.
	Warnings []string `json:"warnings,omitempty"`
	// Runtime holds the scheduler and collector figures of the window, when
	// an execution trace, runtime/metrics or a gctrace log gave any.
	Runtime *RuntimeFigures `json:"runtime,omitempty"`
	// JVM describes the JVM when the evidence came from a JFR recording.
	JVM *JVMInfo `json:"jvm,omitempty"`
}

// RuntimeFigures are the collector and scheduler over the window, each from
// the best source present; zero means unknown.
type RuntimeFigures struct {
	GCCyclesPerSec          float64  `json:"gc_cycles_per_sec,omitempty"`
	GCPauseP99Ms            float64  `json:"gc_pause_p99_ms,omitempty"`      // stop-the-world, per pause
	GCCPUShare              float64  `json:"gc_cpu_share,omitempty"`         // of the CPU used, 0..1
	SchedLatencyP99Ms       float64  `json:"sched_latency_p99_ms,omitempty"` // runnable -> running
	GoroutinesCreatedPerSec float64  `json:"goroutines_created_per_sec,omitempty"`
	Sources                 []string `json:"sources"` // "execution trace", "runtime/metrics", "gctrace", "runtime statistics"
}

// inputRuntime gathers the figures: the trace for the scheduler (it sees
// every transition), runtime/metrics for the whole window, then the
// MemStats samples and the gctrace log.
func inputRuntime(ev *evidence.Evidence) *RuntimeFigures {
	var f RuntimeFigures
	used := map[string]bool{}
	set := func(dst *float64, v float64, src string) {
		if *dst == 0 && v > 0 {
			*dst = v
			used[src] = true
		}
	}
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	rw, haveRW := ev.Runtime()
	if haveRW && rw.Span > 0 {
		set(&f.GCCyclesPerSec, rw.GCCycles/rw.Span.Seconds(), "runtime/metrics")
		set(&f.GCCPUShare, rw.GCShare, "runtime/metrics")
	}
	if gc, ok := ev.GC(); ok && (ev.TracePath != "" || ev.TraceSummary != nil || haveRW || ev.GCTrace != nil) {
		set(&f.GCCyclesPerSec, gc.CyclesPerSec, "runtime statistics")
	}
	if ev.TracePath != "" || ev.TraceSummary != nil {
		if s, err := ev.Trace(); err == nil && s != nil {
			set(&f.SchedLatencyP99Ms, ms(s.SchedLatency.P99), "execution trace")
			set(&f.GCPauseP99Ms, ms(s.GC.STW.P99), "execution trace")
			set(&f.GoroutinesCreatedPerSec, s.Goroutines.CreatedPerSec, "execution trace")
			if s.Window > 0 {
				set(&f.GCCyclesPerSec, float64(s.GC.Cycles)/s.Window.Seconds(), "execution trace")
			}
		}
	}
	if haveRW {
		set(&f.SchedLatencyP99Ms, ms(rw.SchedLatencyP99), "runtime/metrics")
		set(&f.GCPauseP99Ms, ms(rw.GCPauseP99), "runtime/metrics")
		if rw.Span > 0 {
			set(&f.GoroutinesCreatedPerSec, rw.GoroutinesCreated/rw.Span.Seconds(), "runtime/metrics")
		}
	}
	if t := ev.GCTrace; t != nil {
		set(&f.GCCyclesPerSec, t.CyclesPerSec, "gctrace")
		set(&f.GCPauseP99Ms, ms(t.STW.P99), "gctrace")
		set(&f.GCCPUShare, t.CPUShare, "gctrace")
	}
	if len(used) == 0 {
		return nil
	}
	for _, src := range []string{"execution trace", "runtime/metrics", "runtime statistics", "gctrace"} {
		if used[src] {
			f.Sources = append(f.Sources, src)
		}
	}
	return &f
}

// FailedItem is a part of the bundle that collection could not get.
type FailedItem struct {
	Name  string `json:"name"`
	Error string `json:"error"`
}

// New assembles a report from the evidence and the engine's result.
func New(tool string, ev *evidence.Evidence, res rules.Result) *Report {
	r := &Report{
		SchemaVersion: SchemaVersion,
		Tool:          tool,
		Findings:      res.Findings,
		NotChecked:    res.NotChecked,
		Evidence:      ev,
	}
	if r.Findings == nil {
		r.Findings = []rules.Finding{}
	}
	if r.NotChecked == nil {
		r.NotChecked = []rules.NotChecked{}
	}
	in := Inputs{
		Sources:       ev.Sources,
		Profiles:      []string{},
		Failed:        []FailedItem{},
		Skipped:       ev.Skipped(),
		WindowSeconds: ev.Window().Seconds(),
		Metrics:       rules.Has(ev, rules.Metrics),
		System:        rules.Has(ev, rules.System),
		Trace:         ev.TracePath != "",
		Load:          ev.LoadPath != "",
		JVM:           jvmInfo(ev),
	}
	if in.Skipped == nil {
		in.Skipped = []evidence.File{}
	}
	for k := range ev.Profiles {
		in.Profiles = append(in.Profiles, string(k))
	}
	sort.Strings(in.Profiles)
	if p := ev.Profile(evidence.CPU); p != nil {
		in.CPUSamples = evidence.SampleCount(p)
		if in.CPUSamples < rules.MinCPUSamples {
			in.Warnings = append(in.Warnings, fmt.Sprintf("the CPU profile holds only %d samples; the CPU rules need %d (one second of CPU at 100 Hz) to judge shares: profile for longer (collect --duration 60s) or while the service is under load", in.CPUSamples, rules.MinCPUSamples))
		}
	}
	for _, f := range ev.Files {
		if f.Reason == "" && (f.Partial != "" || f.Note != "") {
			in.Caveats = append(in.Caveats, f)
		}
	}
	if m := ev.Manifest; m != nil {
		in.Target = m.Target
		in.Partial = m.Partial
		for _, it := range m.Failed() {
			in.Failed = append(in.Failed, FailedItem{Name: it.Name, Error: it.Error})
		}
	}
	in.Runtime = inputRuntime(ev)
	r.Inputs = in
	r.Load = readLoadFigures(ev.LoadPath)
	return r
}

// Formats maps each output format to its writer.
var Formats = map[string]func(io.Writer, *Report) error{
	"text":     WriteText,
	"json":     WriteJSON,
	"html":     WriteHTML,
	"markdown": WriteMarkdown,
	"sarif":    WriteSARIF,
}

// Write renders r in the named format.
func Write(w io.Writer, format string, r *Report) error {
	f, ok := Formats[format]
	if !ok {
		return fmt.Errorf("unknown format %q (want one of: %s)", format, FormatNames())
	}
	return f(w, r)
}

// FormatNames lists the formats for help texts and errors.
func FormatNames() string {
	names := make([]string, 0, len(Formats))
	for n := range Formats {
		names = append(names, n)
	}
	sort.Strings(names)
	s := ""
	for i, n := range names {
		if i > 0 {
			s += ", "
		}
		s += n
	}
	return s
}
