// Package gate is the pull-request performance gate: it judges a head
// build against a base build, from verify's paired rounds on a running
// service or from two sets of Go benchmark results, and gathers what a
// review needs beside the verdict: the functions that got hotter (the
// profile diff of package facts) and the findings that are new or grew
// (both sides diagnosed). Its Markdown is the pull request's comment.
package gate

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/perfdoctor/perfdoctor/facts"
	"github.com/perfdoctor/perfdoctor/load"
	"github.com/perfdoctor/perfdoctor/report"
	"github.com/perfdoctor/perfdoctor/rules"
	"github.com/perfdoctor/perfdoctor/verify"
)

// Verdicts.
const (
	Regression = "regression"
	Pass       = "pass"
)

// What the gate judges on a running service.
const (
	// JudgeCPU judges the service's CPU time per request, read from /proc
	// around each measurement: far steadier than throughput on a shared
	// machine, and what a CPU regression changes first.
	JudgeCPU = "cpu"
	// JudgeLoad judges throughput and p99 latency, as verify's verdict
	// does: for remote services, whose CPU is not readable here.
	JudgeLoad = "load"
)

// Figure is one compared figure: base and head (means over the rounds or
// runs), head/base with its 95% interval, and whether the gate judged it.
type Figure struct {
	Name     string  `json:"figure"`
	Unit     string  `json:"unit,omitempty"`
	Base     float64 `json:"base"`
	Head     float64 `json:"head"`
	Ratio    float64 `json:"ratio"`
	Low      float64 `json:"ci95_low"`
	High     float64 `json:"ci95_high"`
	N        int     `json:"n" jsonschema:"rounds or runs per side"`
	Judged   bool    `json:"judged"`
	Worse    bool    `json:"worse" jsonschema:"significantly worse by more than the threshold"`
	HigherIs string  `json:"higher_is"` // "better" or "worse"
}

// FindingChange is a finding of the head build that the base did not have,
// or had with a smaller impact.
type FindingChange struct {
	Rule       string  `json:"rule"`
	Severity   string  `json:"severity"`
	Summary    string  `json:"summary"`
	Resource   string  `json:"resource"`
	HeadImpact float64 `json:"head_impact"`
	BaseImpact float64 `json:"base_impact"` // 0 when new
	New        bool    `json:"new"`
}

// Result is the gate's outcome.
type Result struct {
	Verdict   string          `json:"verdict"`
	Why       string          `json:"why"`
	Mode      string          `json:"mode"` // "service" or "benchmarks"
	Base      string          `json:"base"`
	Head      string          `json:"head"`
	Threshold float64         `json:"threshold"`
	Method    string          `json:"method"`
	Figures   []Figure        `json:"figures"`
	Findings  []FindingChange `json:"findings"`
	Diff      *facts.Diff     `json:"-"`
	// DiffNote says why there is no profile diff, when there is none.
	DiffNote string   `json:"diff_note,omitempty"`
	Warnings []string `json:"warnings,omitempty"`
	// Files are the reports written beside the comment, named relative
	// to it (the HTML diff, verify's proof), for the comment's links.
	Files []string `json:"files,omitempty"`
}

// Methods, as the comment and docs/ci.md state them.
const (
	serviceMethod = "paired t-test on the per-round log ratios head/base, rounds alternating their order; " +
		"regression when the 95% interval lies wholly on the worse side of 1 and the estimate is worse by more than the threshold " +
		"(one-sided false-alarm rate at most 2.5% before the threshold)"
	benchMethod = "Welch's t-test on the log figures of each benchmark's runs (go test -count); " +
		"regression when a benchmark's 95% interval lies wholly above 1 and the estimate exceeds 1 by more than the threshold " +
		"(one-sided false-alarm rate at most 2.5% per benchmark before the threshold)"
)

// JudgeService turns a verify run (Before the base build, After the head)
// into the gate's figures and verdict. judge is JudgeCPU or JudgeLoad;
// JudgeCPU needs both sides' CPU per request, which verify measures only
// for processes on this host.
func JudgeService(v *verify.Result, judge string, threshold float64) (*Result, error) {
	if judge != JudgeCPU && judge != JudgeLoad {
		return nil, fmt.Errorf("judge %q: want %s or %s", judge, JudgeCPU, JudgeLoad)
	}
	if len(v.Rounds) < 2 {
		return nil, fmt.Errorf("only %d complete round(s): the gate needs at least two for an interval", len(v.Rounds))
	}
	res := &Result{Mode: "service", Base: v.Before, Head: v.After, Threshold: threshold, Method: serviceMethod,
		Warnings: v.Warnings, Findings: []FindingChange{}}
	mean := func(get func(verify.Round) (float64, float64)) (b, a float64) {
		for _, r := range v.Rounds {
			x, y := get(r)
			b, a = b+x, a+y
		}
		n := float64(len(v.Rounds))
		return b / n, a / n
	}
	add := func(name, unit, higherIs string, r load.Ratio, get func(verify.Round) (float64, float64), judged bool) {
		b, a := mean(get)
		dir := r.Direction(threshold)
		worse := (higherIs == "worse" && dir > 0) || (higherIs == "better" && dir < 0)
		res.Figures = append(res.Figures, Figure{Name: name, Unit: unit, Base: b, Head: a, Ratio: r.Estimate, Low: r.Low, High: r.High,
			N: r.N, Judged: judged, Worse: worse, HigherIs: higherIs})
	}
	cpuKnown := v.CPU.N >= 2 && slices.ContainsFunc(v.Ratios, func(r verify.Ratio) bool { return r.Figure == "CPU/request" })
	if judge == JudgeCPU && !cpuKnown {
		return nil, fmt.Errorf("CPU per request was not measured (a target is not a process on this host, or a round served no request): run both builds here, or judge throughput and latency with --judge %s", JudgeLoad)
	}
	ms := func(d float64) float64 { return d / 1e6 }
	command := v.Rounds[0].Before.Mode == load.ModeCommand
	if cpuKnown {
		add("CPU/request", "µs", "worse", v.CPU, func(r verify.Round) (float64, float64) { return r.BeforeCPU, r.AfterCPU }, judge == JudgeCPU)
	}
	add("throughput", "/s", "better", v.Throughput, func(r verify.Round) (float64, float64) { return r.Before.Throughput, r.After.Throughput }, judge == JudgeLoad)
	if !command {
		add("p50 latency", "ms", "worse", v.P50, func(r verify.Round) (float64, float64) {
			return ms(float64(r.Before.Latency.P50)), ms(float64(r.After.Latency.P50))
		}, false)
		add("p99 latency", "ms", "worse", v.P99, func(r verify.Round) (float64, float64) {
			return ms(float64(r.Before.Latency.P99)), ms(float64(r.After.Latency.P99))
		}, judge == JudgeLoad)
	}
	res.decide()
	return res, nil
}

// decide sets the verdict from the judged figures.
func (r *Result) decide() {
	var worse, judged []string
	for _, f := range r.Figures {
		if !f.Judged {
			continue
		}
		judged = append(judged, f.Name)
		if f.Worse {
			worse = append(worse, fmt.Sprintf("%s %s", f.Name, f.Change()))
		}
	}
	if len(worse) > 0 {
		r.Verdict = Regression
		r.Why = fmt.Sprintf("%s: worse by more than %s with 95%% confidence", strings.Join(worse, "; "), percent(r.Threshold))
		return
	}
	r.Verdict = Pass
	r.Why = fmt.Sprintf("no judged figure (%s) is worse by more than %s with 95%% confidence", strings.Join(judged, ", "), percent(r.Threshold))
}

// Change is the figure's head/base change with its interval, as percents:
// "+5.1% [+3.2%, +7.0%]".
func (f Figure) Change() string {
	if f.N < 2 || math.IsInf(f.High, 1) {
		return signedPercent(f.Ratio-1) + " (no interval)"
	}
	return fmt.Sprintf("%s [%s, %s]", signedPercent(f.Ratio-1), signedPercent(f.Low-1), signedPercent(f.High-1))
}

func signedPercent(x float64) string { return fmt.Sprintf("%+.1f%%", x*100) }

func percent(x float64) string { return fmt.Sprintf("%.3g%%", x*100) }

// Impact growth below this (a fraction of the resource) is noise between
// two diagnoses of the same code, not a grown finding.
const minImpactGrowth = 0.02

// ChangedFindings lists the head's findings that are new (their rule did
// not fire on the base) or grew (a larger impact than the base's largest
// for that rule by at least two points), largest impact first.
func ChangedFindings(base, head *report.Report) []FindingChange {
	baseImpact := map[string]float64{}
	for _, f := range base.Findings {
		baseImpact[f.Rule] = max(baseImpact[f.Rule], f.Impact)
	}
	out := []FindingChange{}
	seen := map[string]bool{}
	for _, f := range head.Findings {
		if seen[f.Rule] {
			continue // a rule's further findings: its largest speaks for it
		}
		b, had := baseImpact[f.Rule]
		if had && f.Impact-b < minImpactGrowth {
			continue
		}
		seen[f.Rule] = true
		out = append(out, FindingChange{Rule: f.Rule, Severity: f.Severity.String(), Summary: f.Summary, Resource: f.Resource,
			HeadImpact: f.Impact, BaseImpact: b, New: !had})
	}
	slices.SortStableFunc(out, func(x, y FindingChange) int {
		return cmp.Compare(y.HeadImpact-y.BaseImpact, x.HeadImpact-x.BaseImpact)
	})
	return out
}

// shortFunc names a function for the comment.
func shortFunc(fn string) string { return rules.ShortFunc(fn) }

// Compare adds what the profiles say: the diff of the two sides' CPU
// profiles (or the only kind both have) and the head's new or grown
// findings. Either report may lack evidence of a kind; the diff is then
// left out with a note, the findings still compared.
func (r *Result) Compare(base, head *report.Report) {
	r.Findings = ChangedFindings(base, head)
	if base.Evidence == nil || head.Evidence == nil {
		r.DiffNote = "the diagnoses kept no evidence"
		return
	}
	d, err := facts.CompareEvidence(base.Evidence, head.Evidence, "")
	if err != nil {
		r.DiffNote = err.Error()
		return
	}
	r.Diff = d
}
