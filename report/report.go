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

	"github.com/perfdoctor/perfdoctor/bundle"
	"github.com/perfdoctor/perfdoctor/evidence"
	"github.com/perfdoctor/perfdoctor/facts"
	"github.com/perfdoctor/perfdoctor/internal/human"
	"github.com/perfdoctor/perfdoctor/internal/output"
	"github.com/perfdoctor/perfdoctor/rules"
)

// SchemaVersion is the version of the JSON document; see docs/schema.md.
const SchemaVersion = 2

// Report is the document every format renders.
type Report struct {
	SchemaVersion int                `json:"schema_version"`
	Tool          string             `json:"tool"`
	Findings      []rules.Finding    `json:"findings"`
	NotChecked    []rules.NotChecked `json:"not_checked"`
	Inputs        Inputs             `json:"inputs"`
	// Load is the load that ran while the evidence was collected (perfdoctor
	// run, demo), when the evidence has load results.
	Load *bundle.LoadResult `json:"load,omitempty"`

	// Catalog is the rules the diagnosis checked (from the caller's
	// rules.Run): SARIF describes them as tool.driver.rules.
	Catalog []*rules.Rule `json:"-"`

	// Evidence is what the report was made from, and Facts the
	// diagnosis's readings of it. The HTML report draws its flame graphs,
	// GC and load figures from them; other formats ignore them, and a
	// Report built by hand may leave them nil.
	Evidence *evidence.Evidence `json:"-"`
	Facts    *facts.Set         `json:"-"`
}

// Inputs summarises the evidence the diagnosis read.
type Inputs struct {
	Sources       []string `json:"sources"`
	Target        string   `json:"target,omitempty"`
	Profiles      []string `json:"profiles"`
	CPUSamples    int64    `json:"cpu_samples"`
	WindowSeconds float64  `json:"window_seconds"`
	Metrics       bool     `json:"metrics"`
	System        bool     `json:"system"`
	Trace         bool     `json:"trace"`
	// TraceWindow is set when the trace is not of the collection window:
	// the agent's flight recorder, ending at the trigger.
	TraceWindow *TraceWindow `json:"trace_window,omitempty"`
	// Build is the target's build information, when its executable or
	// the agent gave it.
	Build   *bundle.BuildInfo `json:"build,omitempty"`
	Load    bool              `json:"load"`
	Partial bool              `json:"partial"`
	Failed  []FailedItem      `json:"failed"`
	Skipped []evidence.File   `json:"skipped"`
	// Caveats are files that were used but read in part (a trace or gzip
	// stream cut short) or with an assumption (folded counts taken as time).
	Caveats []evidence.File `json:"caveats,omitempty"`
	// Warnings say plainly when the evidence is too thin for the rules,
	// and what to do about it.
	Warnings []string `json:"warnings,omitempty"`
	// Runtime holds the scheduler and collector figures of the window, when
	// an execution trace, runtime/metrics or a gctrace log gave any.
	Runtime *facts.RuntimeFigures `json:"runtime,omitempty"`
	// JVM describes the JVM when the evidence came from a JFR recording.
	JVM *JVMInfo `json:"jvm,omitempty"`
	// Work is the unit of work and what one costs (facts.WorkDone), when
	// the evidence counted units or measured the process's CPU.
	Work *facts.Work `json:"work,omitempty"`
}

// TraceWindow is where the execution trace lies in time.
type TraceWindow struct {
	Source  string    `json:"source"`
	End     time.Time `json:"end"`
	Seconds float64   `json:"seconds"`
}

// FailedItem is a part of the bundle that collection could not get.
type FailedItem struct {
	Name  string `json:"name"`
	Error string `json:"error"`
}

// New assembles a report from the diagnosis's facts (and their evidence)
// and the engine's result.
func New(tool string, set *facts.Set, res rules.Result) *Report {
	ev := set.Evidence()
	r := &Report{
		SchemaVersion: SchemaVersion,
		Tool:          tool,
		Findings:      res.Findings,
		NotChecked:    res.NotChecked,
		Catalog:       res.Catalog,
		Evidence:      ev,
		Facts:         set,
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
		Metrics:       ev.HasRuntimeStats(),
		System:        ev.HasProcess(),
		Trace:         ev.TracePath != "",
		Load:          ev.Load != nil,
		JVM:           jvmInfo(ev),
		Build:         ev.Build(),
	}
	if in.Skipped == nil {
		in.Skipped = []evidence.File{}
	}
	if m := ev.Manifest; m != nil && m.Trace != nil && in.Trace {
		in.TraceWindow = &TraceWindow{Source: m.Trace.Source, End: m.Trace.End}
		if s, err := ev.Trace(); err == nil {
			in.TraceWindow.Seconds = s.Window.Seconds()
		}
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
	view := set.Any("report")
	in.Runtime = facts.Get(view, facts.Runtime)
	if w := facts.Get(view, facts.WorkDone); w.Summary() != "" {
		in.Work = &w
		if s := w.RecordingSlowdown(); s >= slowedByRecording {
			in.Warnings = append(in.Warnings, fmt.Sprintf("the recording slowed the service %.1fx: %s %ss/s in the window against %s/s in the unrecorded warm-up just before it; "+
				"the shares of time, and the gains read from them, describe the slowed service", s, human.Number(w.PerSecond), w.Unit, human.Number(w.WarmupPerSecond)))
		}
	}
	r.Inputs = in
	r.Load = ev.Load
	return r
}

// slowedByRecording is the slowdown from the warm-up to the window from
// which the report says the recording changed what it measured. Measured:
// perf's scheduler events on PostgreSQL committing every insert (a
// context switch per commit and more), 8.7k INSERTs/s unrecorded against
// 2.9k recorded (3.0x); a JVM right after JFR's first start deoptimized
// every method, 16.8k requests/s against 3.7k (4.5x) before the collection
// waited for the JIT to settle. A Go service under collect's CPU profile
// and trace (perfdoctor demo): 8,353 requests/s in the warm-up, 8,183 in
// the window (1.02x).
const slowedByRecording = 1.5

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

// Save writes r in the named format to path (whole or not at all, never
// over what path points at: see internal/output), or with no path or "-"
// to w.
func Save(w io.Writer, path, format string, r *Report) error {
	return output.Write(path, w, output.Shared, func(w io.Writer) error { return Write(w, format, r) })
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
