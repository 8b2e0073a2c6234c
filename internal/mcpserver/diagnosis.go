package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/perfdoctor/perfdoctor/diagnose"
	"github.com/perfdoctor/perfdoctor/facts"
	"github.com/perfdoctor/perfdoctor/internal/ruledocs"
	"github.com/perfdoctor/perfdoctor/report"
	"github.com/perfdoctor/perfdoctor/rules"
	"github.com/perfdoctor/perfdoctor/rules/catalog"
)

// Lengths a brief keeps of the report's prose: enough to act on, the rest
// is in the report files and `explain`.
const (
	summaryChars  = 400
	fixChars      = 400
	factChars     = 120
	evidenceFacts = 4
	locations     = 3
	warnings      = 3
)

type diagnoseInput struct {
	Path string `json:"path,omitempty" jsonschema:"a bundle folder, a folder of profiles or one profile file, inside the allowed folders"`
	// Instead of path, a live target (pprof URL, perf_pid or jvm_pid):
	// perfdoctor collects a bundle from it first.
	liveTarget
	DurationSeconds float64 `json:"duration_seconds,omitempty" jsonschema:"with target: the collection window in seconds (default 10, at most 120)"`
	Output          string  `json:"output,omitempty" jsonschema:"with target: the bundle folder to create (default a new folder in the first allowed folder)"`
	Cursor          string  `json:"cursor,omitempty" jsonschema:"next_cursor of a previous answer, for the next findings"`
}

type diagnoseAnswer struct {
	Source        string    `json:"source" jsonschema:"what was diagnosed"`
	Bundle        string    `json:"bundle,omitempty" jsonschema:"the bundle collected from the live target"`
	Profiles      []string  `json:"profiles" jsonschema:"the profile kinds read"`
	CPUSamples    int64     `json:"cpu_samples"`
	WindowSeconds float64   `json:"window_seconds"`
	Work          string    `json:"work,omitempty" jsonschema:"the units of work served and what one cost"`
	Warnings      []string  `json:"warnings,omitempty"`
	Total         int       `json:"total_findings"`
	Findings      []finding `json:"findings" jsonschema:"ranked: the first recovers the most"`
	NotChecked    int       `json:"not_checked" jsonschema:"rules that lacked their evidence"`
	NextCursor    string    `json:"next_cursor,omitempty"`
}

// finding is a rules.Finding in brief.
type finding struct {
	ID        string     `json:"id"`
	Rule      string     `json:"rule" jsonschema:"the rule's ID, for explain"`
	Class     string     `json:"class"`
	Severity  string     `json:"severity" jsonschema:"info, low, medium or high"`
	Impact    float64    `json:"impact" jsonschema:"fraction of the resource the fix can recover"`
	Resource  string     `json:"resource" jsonschema:"cpu, memory or latency"`
	Summary   string     `json:"summary"`
	Fix       string     `json:"fix"`
	Evidence  []string   `json:"evidence,omitempty"`
	Locations []location `json:"locations,omitempty" jsonschema:"functions to look at with source, callers and callees"`
	CausedBy  string     `json:"caused_by,omitempty" jsonschema:"the finding this one is a consequence of"`
}

type location struct {
	Function string  `json:"function"`
	File     string  `json:"file,omitempty"`
	Line     int64   `json:"line,omitempty"`
	Share    float64 `json:"share"`
}

func brief(f rules.Finding) finding {
	b := finding{ID: f.ID, Rule: f.Rule, Class: f.Class, Severity: f.Severity.String(), Impact: round4(f.Impact),
		Resource: f.Resource, Summary: clip(f.Summary, summaryChars), Fix: clip(f.Fix, fixChars), CausedBy: f.CausedBy}
	for _, e := range f.Evidence[:min(len(f.Evidence), evidenceFacts)] {
		b.Evidence = append(b.Evidence, clip(e.Name+": "+e.Value, factChars))
	}
	for _, l := range f.Locations[:min(len(f.Locations), locations)] {
		b.Locations = append(b.Locations, location{Function: clip(l.Function, factChars), File: clip(l.File, factChars), Line: l.Line, Share: round4(l.Share)})
	}
	return b
}

func (s *server) registerDiagnosis(srv *mcp.Server) {
	addTool(srv, "diagnose", "Diagnose a bundle, a folder of profiles or a profile file (path), or a live Go service (target, "+
		"its pprof URL, collected for duration_seconds first): the ranked findings with their evidence, the functions "+
		"involved and the fix. Page with cursor.", s.diagnose)
	addTool(srv, "diff", "Compare two bundles or two profiles of one kind (a before, b after): each function's flat and "+
		"cumulative share on both sides, largest change first, and the hot functions new in b or gone from a.", s.diff)
	addTool(srv, "explain", "Explain a rule (by ID such as GC001, or name): what it detects, the evidence it reads, the fix, "+
		"in pages of Markdown. Without a rule, list the catalog.", s.explain)
}

func (s *server) diagnose(ctx context.Context, in diagnoseInput) (*diagnoseAnswer, error) {
	start, err := parseCursor(in.Cursor)
	if err != nil {
		return nil, err
	}
	a := &diagnoseAnswer{}
	path := in.Path
	switch {
	case (in.Path == "") == (in.liveTarget == liveTarget{}):
		return nil, errors.New("give path (a bundle or profiles) or a live target (target, perf_pid or jvm_pid), one of them")
	case in.Path == "":
		if in.Cursor != "" {
			return nil, errors.New("a cursor pages a diagnosis already made: pass the bundle it collected as path, with the cursor")
		}
		dir, err := s.collectBundle(ctx, in.liveTarget, in.DurationSeconds, in.Output)
		if err != nil {
			return nil, err
		}
		path, a.Bundle = dir, dir
	}
	ev, err := s.loadEvidence(ctx, path)
	if err != nil {
		return nil, err
	}
	rep, err := diagnose.Run(ctx, diagnose.Request{Evidence: ev, Tool: s.tool})
	if err != nil {
		return nil, err
	}
	return a, summarise(rep, a, a, start)
}

// summarise fills a with the report's findings in brief from start on,
// as many as keep answer (a, or the answer a is part of) within bounds.
func summarise(rep *report.Report, a *diagnoseAnswer, answer any, start int) error {
	a.Source = strings.Join(rep.Inputs.Sources, ", ")
	a.Profiles, a.CPUSamples, a.WindowSeconds = rep.Inputs.Profiles, rep.Inputs.CPUSamples, round4(rep.Inputs.WindowSeconds)
	if rep.Inputs.Work != nil {
		a.Work = clip(rep.Inputs.Work.Summary(), summaryChars)
	}
	for _, w := range rep.Inputs.Warnings[:min(len(rep.Inputs.Warnings), warnings)] {
		a.Warnings = append(a.Warnings, clip(w, summaryChars))
	}
	a.Total, a.NotChecked = len(rep.Findings), len(rep.NotChecked)
	briefs := make([]finding, len(rep.Findings))
	for i, f := range rep.Findings {
		briefs[i] = brief(f)
	}
	return fitPage(briefs, start, len(briefs), answer, func(p []finding, next string) { a.Findings, a.NextCursor = p, next })
}

type diffInput struct {
	A      string `json:"a" jsonschema:"before: a bundle, a folder of profiles or a profile file"`
	B      string `json:"b" jsonschema:"after: a bundle, a folder of profiles or a profile file"`
	Kind   string `json:"kind,omitempty" jsonschema:"profile kind: cpu, allocs, heap, mutex, block, goroutine (default cpu, else the only kind both have)"`
	Limit  int    `json:"limit,omitempty" jsonschema:"functions per page (default 15)"`
	Cursor string `json:"cursor,omitempty"`
}

type diffAnswer struct {
	Kind      string      `json:"kind"`
	Unit      string      `json:"unit"`
	TotalA    int64       `json:"total_a"`
	TotalB    int64       `json:"total_b"`
	MaxGrowth float64     `json:"max_growth" jsonschema:"largest rise of a function's share, as a fraction"`
	MaxGrower string      `json:"max_growth_function,omitempty"`
	New       []string    `json:"new,omitempty" jsonschema:"hot functions only in b"`
	Vanished  []string    `json:"vanished,omitempty" jsonschema:"hot functions only in a"`
	Total     int         `json:"total_functions"`
	Functions []funcDelta `json:"functions" jsonschema:"largest change first; shares are fractions of each side's total"`
	Next      string      `json:"next_cursor,omitempty"`
}

type funcDelta struct {
	Function string  `json:"function"`
	FlatA    float64 `json:"flat_a"`
	FlatB    float64 `json:"flat_b"`
	CumA     float64 `json:"cum_a"`
	CumB     float64 `json:"cum_b"`
}

// diffNames bounds the new and vanished lists.
const diffNames = 8

func (s *server) diff(ctx context.Context, in diffInput) (*diffAnswer, error) {
	start, err := parseCursor(in.Cursor)
	if err != nil {
		return nil, err
	}
	limit, err := pageLimit(in.Limit, 15)
	if err != nil {
		return nil, err
	}
	evA, err := s.loadEvidence(ctx, in.A)
	if err != nil {
		return nil, fmt.Errorf("a: %w", err)
	}
	evB, err := s.loadEvidence(ctx, in.B)
	if err != nil {
		return nil, fmt.Errorf("b: %w", err)
	}
	d, err := facts.CompareEvidence(evA, evB, in.Kind)
	if err != nil {
		return nil, err
	}
	a := &diffAnswer{Kind: d.Kind, Unit: d.Unit, TotalA: d.A.Total, TotalB: d.B.Total, MaxGrowth: round4(d.MaxGrowth),
		MaxGrower: clip(d.MaxGrowthFunc, factChars), Total: len(d.Functions)}
	for _, f := range d.New[:min(len(d.New), diffNames)] {
		a.New = append(a.New, clip(f.Function, factChars))
	}
	for _, f := range d.Vanished[:min(len(d.Vanished), diffNames)] {
		a.Vanished = append(a.Vanished, clip(f.Function, factChars))
	}
	rows := make([]funcDelta, len(d.Functions))
	for i, f := range d.Functions {
		rows[i] = funcDelta{Function: clip(f.Function, factChars), FlatA: round4(f.FlatA), FlatB: round4(f.FlatB), CumA: round4(f.CumA), CumB: round4(f.CumB)}
	}
	return a, fitPage(rows, start, limit, a, func(p []funcDelta, next string) { a.Functions, a.Next = p, next })
}

type explainInput struct {
	Rule   string `json:"rule,omitempty" jsonschema:"a rule's ID (GC001) or name; empty lists the catalog"`
	Cursor string `json:"cursor,omitempty"`
}

type explainAnswer struct {
	Rule  string     `json:"rule,omitempty"`
	Class string     `json:"class,omitempty"`
	Title string     `json:"title,omitempty"`
	Page  string     `json:"page,omitempty" jsonschema:"the rule's documentation in Markdown, this part of it"`
	Rules []ruleLine `json:"rules,omitempty" jsonschema:"the catalog, when no rule was named"`
	Next  string     `json:"next_cursor,omitempty"`
}

type ruleLine struct {
	ID    string `json:"id"`
	Class string `json:"class"`
	Title string `json:"title"`
}

// explainChunk is how much of a rule's page one answer carries.
const explainChunk = 4 << 10

func (s *server) explain(_ context.Context, in explainInput) (*explainAnswer, error) {
	start, err := parseCursor(in.Cursor)
	if err != nil {
		return nil, err
	}
	if in.Rule == "" {
		a := &explainAnswer{}
		var all []ruleLine
		for _, r := range catalog.All() {
			all = append(all, ruleLine{ID: r.ID, Class: r.Class, Title: clip(r.Doc.Title, factChars)})
		}
		return a, fitPage(all, start, len(all), a, func(p []ruleLine, next string) { a.Rules, a.Next = p, next })
	}
	r := catalog.Lookup(in.Rule)
	if r == nil {
		return nil, fmt.Errorf("no rule %q; call explain without a rule to list them", in.Rule)
	}
	page := ruledocs.Page(r)
	if start > len(page) {
		return nil, fmt.Errorf("cursor %d is past the end of %s's page", start, r.ID)
	}
	end := min(start+explainChunk, len(page))
	if end < len(page) {
		// End the part at a line's end when one is near, so Markdown
		// and words stay whole.
		if i := strings.LastIndexByte(page[start:end], '\n'); i > explainChunk/2 {
			end = start + i + 1
		}
		for end > start && !utf8RuneStart(page[end]) {
			end--
		}
	}
	a := &explainAnswer{Rule: r.ID, Class: r.Class, Title: r.Doc.Title, Page: page[start:end]}
	if end < len(page) {
		a.Next = fmt.Sprint(end)
	}
	return a, nil
}

// pageLimit checks a requested page size, def when none was asked for.
func pageLimit(n, def int) (int, error) {
	switch {
	case n == 0:
		return def, nil
	case n < 0 || n > 100:
		return 0, fmt.Errorf("limit %d out of range 1..100", n)
	}
	return n, nil
}

// round4 keeps four decimals: shares to a hundredth of a percent.
func round4(v float64) float64 {
	return float64(int64(v*1e4+0.5*sign(v))) / 1e4
}

func sign(v float64) float64 {
	if v < 0 {
		return -1
	}
	return 1
}
