package report

import (
	"bufio"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/perfdoctor/perfdoctor/internal/human"
	"github.com/perfdoctor/perfdoctor/rules"
)

// MarkdownOptions adjusts the Markdown report.
type MarkdownOptions struct {
	// Top is how many findings get a section with their fix below the
	// table; 0 means DefaultMarkdownTop.
	Top int
}

// DefaultMarkdownTop is the number of findings detailed by default.
const DefaultMarkdownTop = 3

// WriteMarkdown writes a compact report for pull-request comments and
// tickets: a table of every finding, then the top few with their fix.
func WriteMarkdown(w io.Writer, r *Report) error {
	return WriteMarkdownWith(w, r, MarkdownOptions{})
}

// WriteMarkdownWith is WriteMarkdown with options.
func WriteMarkdownWith(w io.Writer, r *Report, opts MarkdownOptions) error {
	top := opts.Top
	if top <= 0 {
		top = DefaultMarkdownTop
	}
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "### perfdoctor: %s\n\n", plural(len(r.Findings), "finding"))
	fmt.Fprintf(bw, "Evidence: %s.", mdText(describeInputs(r.Inputs)))
	if len(r.Inputs.Sources) > 0 {
		fmt.Fprintf(bw, " Source: `%s`.", strings.Join(r.Inputs.Sources, "`, `"))
	}
	bw.WriteString("\n")
	if w := r.Inputs.Work; w != nil {
		fmt.Fprintf(bw, "\nWork: %s.\n", mdText(w.Summary()))
	}
	if l := r.Load; l != nil {
		fmt.Fprintf(bw, "\nLoad: %s.\n", mdText(describeLoad(l)))
		if len(l.Timeline) > 1 {
			bw.WriteString("\n<details><summary>Load per second</summary>\n\n| second | ok | errors | p50 | p99 | max |\n|---:|---:|---:|---:|---:|---:|\n")
			for _, s := range l.Timeline {
				fmt.Fprintf(bw, "| %d | %d | %d | %s | %s | %s |\n", s.T, s.OK, s.Errors, human.Millis(s.P50), human.Millis(s.P99), human.Millis(s.Max))
			}
			bw.WriteString("\n</details>\n")
		}
	}
	if r.Inputs.Partial || len(r.Inputs.Failed) > 0 {
		fmt.Fprintf(bw, "\n> **Partial bundle:** %d item(s) failed:", len(r.Inputs.Failed))
		for i, f := range r.Inputs.Failed {
			sep := " "
			if i > 0 {
				sep = "; "
			}
			fmt.Fprintf(bw, "%s`%s` (%s)", sep, f.Name, mdText(f.Error))
		}
		bw.WriteString("\n")
	}
	for _, c := range r.Inputs.Caveats {
		fmt.Fprintf(bw, "\n> %s\n", mdText(caveatLine(c)))
	}
	for _, w := range r.Inputs.Warnings {
		fmt.Fprintf(bw, "\n> **Warning:** %s\n", mdText(w))
	}
	if len(r.Findings) == 0 {
		bw.WriteString("\nNo findings: nothing in the evidence crosses a rule's threshold.\n")
	} else {
		bw.WriteString("\n| # | Severity | Finding | Rule | Est. gain | Summary |\n|---:|---|---|---|---:|---|\n")
		refs := newRefs(r.Findings)
		for i, f := range r.Findings {
			sev := f.Severity.String()
			if f.Severity >= rules.High {
				sev = "**" + sev + "**"
			}
			summary := mdCell(f.Summary)
			if f.CausedBy != "" {
				summary = "↳ symptom of " + f.CausedBy + ": " + summary
			}
			fmt.Fprintf(bw, "| %s | %s | %s | %s | %s of %s | %s |\n", refs.label[i], sev, f.Class, f.Rule,
				human.Percent(f.Impact), f.Resource, summary)
		}
		for i, f := range r.Findings[:min(top, len(r.Findings))] {
			causedBy, explains := refs.lines(r.Findings, i)
			writeMarkdownFinding(bw, refs.label[i], f, causedBy, explains)
		}
		if rest := len(r.Findings) - top; rest > 0 {
			fmt.Fprintf(bw, "\n_%s more in the full report (`perfdoctor diagnose --format html`)._\n", plural(rest, "finding"))
		}
	}
	if len(r.NotChecked) > 0 {
		parts := make([]string, len(r.NotChecked))
		for i, nc := range r.NotChecked {
			parts[i] = fmt.Sprintf("%s (%s)", nc.Rule, nc.Reason)
		}
		fmt.Fprintf(bw, "\nNot checked: %s.\n", strings.Join(parts, ", "))
	}
	return bw.Flush()
}

func writeMarkdownFinding(w *bufio.Writer, label string, f rules.Finding, causedBy, explains string) {
	fmt.Fprintf(w, "\n#### %s. %s (%s): est. gain %s of %s\n\n%s\n", label, f.Class, f.Rule, human.Percent(f.Impact), f.Resource, mdText(f.Summary))
	for _, l := range []string{causedBy, explains} {
		if l != "" {
			fmt.Fprintf(w, "\n_%s._\n", mdText(upperFirst(l)))
		}
	}
	if len(f.Locations) > 0 {
		var where []string
		for _, l := range f.Locations[:min(3, len(f.Locations))] {
			s := fmt.Sprintf("`%s`", rules.ShortFunc(l.Function))
			var detail []string
			if l.File != "" {
				pos := filepath.Base(l.File)
				if l.Line > 0 {
					pos += fmt.Sprintf(":%d", l.Line)
				}
				detail = append(detail, pos)
			}
			detail = append(detail, human.Percent(l.Share))
			if l.Role != "" {
				detail = append(detail, l.Role)
			}
			where = append(where, s+" ("+strings.Join(detail, ", ")+")")
		}
		fmt.Fprintf(w, "\n**Where:** %s\n", strings.Join(where, "; "))
	}
	fmt.Fprintf(w, "\n**Fix:** %s\n", mdText(f.Fix))
	if f.Example != "" {
		fmt.Fprintf(w, "\n```\n%s\n```\n", strings.TrimRight(f.Example, "\n"))
	}
	if f.Tried != nil {
		fmt.Fprintf(w, "\n**Tried:** %s\n", mdText(f.Tried.Summary()))
	}
}

// mdText folds prose onto one line.
func mdText(s string) string { return strings.Join(strings.Fields(s), " ") }

// mdCell makes text safe inside a table cell.
func mdCell(s string) string { return strings.ReplaceAll(mdText(s), "|", `\|`) }
