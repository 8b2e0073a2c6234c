package gate

import (
	"bufio"
	"fmt"
	"io"
	"strings"

	"github.com/perfdoctor/perfdoctor/internal/human"
)

// Marker opens every comment, so a CI job can find and update its own
// comment instead of adding one per push.
const Marker = "<!-- perfdoctor-gate -->"

// hotterRows bounds the table of functions that got hotter.
const hotterRows = 10

// WriteMarkdown writes the pull request's comment: the verdict, the
// figures with their intervals, the functions that got hotter, the new or
// grown findings, and the method.
func (r *Result) WriteMarkdown(w io.Writer) error {
	bw := bufio.NewWriter(w)
	icon := "✅"
	title := "no performance regression"
	if r.Verdict == Regression {
		icon, title = "❌", "performance regression"
	}
	fmt.Fprintf(bw, "%s\n## %s perfdoctor gate: %s\n\n", Marker, icon, title)
	fmt.Fprintf(bw, "**Verdict: %s.** %s.\n\n", r.Verdict, cell(r.Why))
	if r.Base != "" || r.Head != "" {
		fmt.Fprintf(bw, "Base: `%s` · head: `%s` · threshold %s\n\n", cell(r.Base), cell(r.Head), percent(r.Threshold))
	} else {
		fmt.Fprintf(bw, "Threshold %s\n\n", percent(r.Threshold))
	}

	fmt.Fprintf(bw, "### Figures\n\n| figure | base | head | head/base | 95%% interval | judged |\n|---|---:|---:|---:|---|---|\n")
	for _, f := range r.Figures {
		judged := ""
		switch {
		case f.Judged && f.Worse:
			judged = "**worse**"
		case f.Judged:
			judged = "yes"
		}
		interval := "n/a"
		if f.N >= 2 {
			interval = fmt.Sprintf("%s … %s", signedPercent(f.Low-1), signedPercent(f.High-1))
		}
		fmt.Fprintf(bw, "| %s | %s | %s | %s | %s | %s |\n", cell(f.Name), value(f.Base, f.Unit), value(f.Head, f.Unit),
			signedPercent(f.Ratio-1), interval, judged)
	}
	if n := r.rounds(); n > 0 {
		fmt.Fprintf(bw, "\n%d %s a side.\n", n, map[string]string{"service": "rounds", "benchmarks": "runs"}[r.Mode])
	}

	fmt.Fprintf(bw, "\n### Functions that got hotter\n\n")
	switch {
	case r.Diff == nil:
		fmt.Fprintf(bw, "No profile diff: %s.\n", cell(r.DiffNote))
	case len(r.Diff.Growers) == 0:
		fmt.Fprintf(bw, "No function's share of the %s profile grew by 0.1 points or more.\n", r.Diff.Kind)
	default:
		fmt.Fprintf(bw, "Share of each side's %s profile; flat is the function itself, cum with its callees.\n\n", r.Diff.Kind)
		fmt.Fprintf(bw, "| function | flat base → head | Δ flat | cum base → head | Δ cum |\n|---|---:|---:|---:|---:|\n")
		for _, g := range r.Diff.Growers[:min(len(r.Diff.Growers), hotterRows)] {
			fmt.Fprintf(bw, "| `%s` | %s → %s | %+.1f pp | %s → %s | %+.1f pp |\n", cell(shortFunc(g.Function)),
				human.Percent(g.FlatA), human.Percent(g.FlatB), g.FlatDelta*100, human.Percent(g.CumA), human.Percent(g.CumB), g.CumDelta*100)
		}
	}

	fmt.Fprintf(bw, "\n### New or grown findings\n\n")
	switch {
	case r.Diff == nil && len(r.Findings) == 0:
		fmt.Fprintf(bw, "Not diagnosed: no profiles of the two builds.\n")
	case len(r.Findings) == 0:
		fmt.Fprintf(bw, "None: the head build's diagnosis has no finding the base lacks or that grew by %s or more.\n", percent(minImpactGrowth))
	default:
		for _, f := range r.Findings {
			change := fmt.Sprintf("new, %s of %s", human.Percent(f.HeadImpact), f.Resource)
			if !f.New {
				change = fmt.Sprintf("grew from %s to %s of %s", human.Percent(f.BaseImpact), human.Percent(f.HeadImpact), f.Resource)
			}
			fmt.Fprintf(bw, "- **%s** (%s; %s): %s\n", f.Rule, f.Severity, change, cell(f.Summary))
		}
	}

	if len(r.Warnings) > 0 {
		fmt.Fprintf(bw, "\n### Warnings\n\n")
		for _, w := range r.Warnings {
			fmt.Fprintf(bw, "- %s\n", cell(w))
		}
	}
	if len(r.Files) > 0 {
		fmt.Fprintf(bw, "\nReports: %s\n", strings.Join(r.Files, ", "))
	}
	fmt.Fprintf(bw, "\n<sub>Method: %s.</sub>\n", r.Method)
	return bw.Flush()
}

// rounds is the rounds (or runs) per side behind the judged figures.
func (r *Result) rounds() int {
	for _, f := range r.Figures {
		if f.Judged {
			return f.N
		}
	}
	return 0
}

func value(v float64, unit string) string {
	switch unit {
	case "ms":
		return human.Millis(v)
	case "µs":
		return human.Number(v) + " µs"
	case "/s":
		return human.Number(v) + "/s"
	case "":
		return human.Number(v)
	}
	return human.Number(v) + " " + unit
}

// cell keeps text on one line and out of a table's way.
func cell(s string) string {
	return strings.ReplaceAll(strings.Join(strings.Fields(s), " "), "|", "\\|")
}
