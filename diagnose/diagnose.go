// Package diagnose is the pipeline's diagnosis step: it loads the evidence
// (a bundle, a folder of profiles, loose files, a gctrace log, a system
// window), runs the rule catalog over it once and returns the report.
// Commands, the fleet and the casebook share it, so a diagnosis is made the
// same way wherever it is asked for.
package diagnose

import (
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/perfdoctor/perfdoctor/collect"
	"github.com/perfdoctor/perfdoctor/evidence"
	"github.com/perfdoctor/perfdoctor/report"
	"github.com/perfdoctor/perfdoctor/report/systext"
	"github.com/perfdoctor/perfdoctor/rules"
	"github.com/perfdoctor/perfdoctor/rules/catalog"
)

// Options says how to read the evidence and who made the report.
type Options struct {
	Tool string // the report's producer, "perfdoctor VERSION"
	Load evidence.LoadOptions
	// GCTrace, when set, is a GODEBUG=gctrace=1 log read as evidence too,
	// named GCTraceName in messages; with no paths it is the only evidence.
	GCTrace     io.Reader
	GCTraceName string
}

// Paths diagnoses what the paths hold with the whole catalog.
func Paths(opt Options, paths ...string) (*report.Report, error) {
	ev := evidence.New()
	if len(paths) > 0 {
		var err error
		if ev, err = evidence.LoadWith(opt.Load, paths...); err != nil {
			return nil, err
		}
	}
	if opt.GCTrace != nil {
		if err := ev.AddGCTrace(opt.GCTrace, opt.GCTraceName); err != nil {
			return nil, err
		}
	}
	if len(paths) == 0 && opt.GCTrace == nil {
		return nil, errors.New("nothing to diagnose: give a bundle, profiles or a gctrace log")
	}
	return report.New(opt.Tool, ev, rules.Run(ev, catalog.All())), nil
}

// Window diagnoses a system window (two /proc snapshots and perf's stacks)
// with the rules that read only such evidence, and summarises the window
// as vmstat, mpstat and ss would.
func Window(tool string, win *collect.Window) (*report.Report, systext.Summary, error) {
	ev := evidence.New("/proc")
	ev.SystemStart, ev.SystemEnd = win.Start, win.End
	if win.Perf != nil {
		ev.Profiles[evidence.Perf] = win.Perf
	}
	delta, ok := ev.SystemDelta()
	if !ok {
		return nil, systext.Summary{}, fmt.Errorf("the two system snapshots are not in time order")
	}
	rep := report.New(tool, ev, rules.Run(ev, SystemRules()))
	return rep, systext.Summarize(delta, win.Perf, win.PerfErr), nil
}

// SystemRules are the rules that read only /proc and perf evidence.
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
