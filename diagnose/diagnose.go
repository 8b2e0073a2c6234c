// Package diagnose is the pipeline's diagnosis step and its one entry
// point: it loads the evidence (a bundle, a folder of profiles, loose
// files, a gctrace log) or takes evidence already in memory (a system
// window, a fleet's merged service), computes the facts once, runs the
// rule catalog over them and returns the report; SaveReports writes a
// report into the output folder's layout. The CLI, run, demo, try, sys,
// view, history, the fleet and the casebook all go through it, so a
// diagnosis is made the same way wherever it is asked for.
package diagnose

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"

	"github.com/perfdoctor/perfdoctor/evidence"
	"github.com/perfdoctor/perfdoctor/facts"
	"github.com/perfdoctor/perfdoctor/internal/version"
	"github.com/perfdoctor/perfdoctor/report"
	"github.com/perfdoctor/perfdoctor/rules"
	"github.com/perfdoctor/perfdoctor/rules/catalog"
)

// Request says what to diagnose and how.
type Request struct {
	// Paths are bundles, folders of profiles and loose files, read with
	// Load's options (which may add a gctrace log, alone or beside them).
	Paths []string
	Load  evidence.LoadOptions
	// Evidence, instead of Paths, is evidence already in memory.
	Evidence *evidence.Evidence
	// Catalog is the rules to check; nil means the whole catalog.
	Catalog []*rules.Rule
	// Tool names the report's producer; empty means this build
	// (version.Tool).
	Tool string
}

// Run diagnoses what the request names: the evidence, read once and
// whole, the facts over it, the catalog's findings, ranked, as a report.
func Run(ctx context.Context, req Request) (*report.Report, error) {
	ev := req.Evidence
	switch {
	case ev != nil && (len(req.Paths) > 0 || req.Load.GCTrace != nil):
		return nil, errors.New("diagnose: give evidence or paths to read, not both")
	case ev == nil && len(req.Paths) == 0 && req.Load.GCTrace == nil:
		return nil, errors.New("nothing to diagnose: give a bundle, profiles or a gctrace log")
	case ev == nil:
		var err error
		if ev, err = evidence.Load(ctx, req.Load, req.Paths...); err != nil {
			return nil, err
		}
	}
	catalog := req.Catalog
	if catalog == nil {
		catalog = All()
	}
	tool := req.Tool
	if tool == "" {
		tool = version.Tool()
	}
	set := facts.New(ev)
	return report.New(tool, set, rules.Run(set, catalog)), nil
}

// All is the whole catalog.
func All() []*rules.Rule { return catalog.All() }

// SystemRules are the rules that read only /proc and perf evidence: what
// perfdoctor sys checks.
func SystemRules() []*rules.Rule {
	var out []*rules.Rule
	for _, r := range catalog.All() {
		if len(r.Needs) > 0 && !slices.ContainsFunc(r.Needs, func(in rules.Input) bool {
			return in != rules.Host && in != rules.System && in != rules.Perf
		}) {
			out = append(out, r)
		}
	}
	return out
}

// ReportFiles are the reports SaveReports writes into an output folder, by
// format: what run, demo, try and the fleet leave beside a bundle.
var ReportFiles = []struct{ Format, Name string }{
	{"text", "report.txt"}, {"json", "report.json"}, {"html", "report.html"},
}

// SaveReports writes rep into dir as ReportFiles, each written whole or
// not at all.
func SaveReports(dir string, rep *report.Report) error {
	for _, f := range ReportFiles {
		if err := report.Save(nil, filepath.Join(dir, f.Name), f.Format, rep); err != nil {
			return fmt.Errorf("report %s: %w", f.Name, err)
		}
	}
	return nil
}
