package report

import (
	"bufio"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"

	"github.com/perfdoctor/perfdoctor/evidence"
	"github.com/perfdoctor/perfdoctor/rules"
)

// WriteText writes the report for a person at a terminal: the verdict first,
// then each finding with its evidence, locations and fix.
func WriteText(w io.Writer, r *Report) error {
	bw := bufio.NewWriter(w)
	in := r.Inputs
	fmt.Fprintf(bw, "perfdoctor: %s from %s\n", plural(len(r.Findings), "finding"), strings.Join(in.Sources, ", "))
	fmt.Fprintf(bw, "  evidence: %s\n", describeInputs(in))
	if rt := in.Runtime; rt != nil {
		fmt.Fprintf(bw, "  runtime: %s\n", describeRuntime(rt))
	}
	if l := r.Load; l != nil {
		fmt.Fprintf(bw, "  load: %s\n", describeLoad(l))
		if len(l.Timeline) > 1 {
			fmt.Fprintf(bw, "  load per second (req/p99): %s\n", timelineLine(l.Timeline))
		}
		for _, w := range l.Warnings {
			fmt.Fprintf(bw, "  load warning: %s\n", w)
		}
	}
	if in.Partial || len(in.Failed) > 0 {
		fmt.Fprintf(bw, "  partial bundle: %d item(s) failed:\n", len(in.Failed))
		for _, f := range in.Failed {
			fmt.Fprintf(bw, "    %s: %s\n", f.Name, f.Error)
		}
	}
	for _, c := range in.Caveats {
		fmt.Fprintf(bw, "  %s\n", caveatLine(c))
	}
	for _, w := range in.Warnings {
		fmt.Fprintf(bw, "  warning: %s\n", w)
	}
	if len(r.Findings) == 0 {
		fmt.Fprintln(bw, "\nNo findings: nothing in the evidence crosses a rule's threshold.")
	}
	for i, f := range r.Findings {
		writeFinding(bw, i+1, f)
	}
	if len(r.NotChecked) > 0 {
		fmt.Fprintln(bw, "\nNot checked:")
		for _, nc := range r.NotChecked {
			fmt.Fprintf(bw, "  %-9s %-22s %s\n", nc.Rule, nc.Class, nc.Reason)
			for _, c := range nc.Collect {
				fmt.Fprintf(bw, "  %-9s %-22s   collect %s\n", "", "", c)
			}
		}
	}
	if len(in.Skipped) > 0 {
		fmt.Fprintln(bw, "\nSkipped files:")
		for _, s := range in.Skipped {
			fmt.Fprintf(bw, "  %s: %s\n", s.Path, s.Reason)
		}
	}
	return bw.Flush()
}

func writeFinding(w io.Writer, n int, f rules.Finding) {
	fmt.Fprintf(w, "\n%d. [%s] %s (%s)  est. gain %s of %s\n", n, strings.ToUpper(f.Severity.String()), f.Class, f.Rule, rules.Percent(f.Impact), f.Resource)
	fmt.Fprintf(w, "   %s\n", f.Summary)
	if len(f.Evidence) > 0 {
		fmt.Fprintln(w, "   Evidence:")
		width := 0
		for _, e := range f.Evidence {
			width = max(width, len(e.Name))
		}
		for _, e := range f.Evidence {
			fmt.Fprintf(w, "     %-*s  %s\n", width, e.Name, e.Value)
		}
	}
	if len(f.Locations) > 0 {
		fmt.Fprintln(w, "   Where:")
		for _, l := range f.Locations {
			pos := ""
			if l.File != "" {
				pos = fmt.Sprintf("%s:%d", filepath.Base(l.File), l.Line)
			}
			fmt.Fprintf(w, "     %6s  %-40s %s  (%s)\n", rules.Percent(l.Share), rules.ShortFunc(l.Function), pos, l.Role)
		}
	}
	fmt.Fprintf(w, "   Fix: %s\n", wrap(f.Fix, 8))
	if f.Example != "" {
		// Code keeps its own line breaks, aligned under the first line.
		fmt.Fprintf(w, "   Example: %s\n", strings.ReplaceAll(f.Example, "\n", "\n            "))
	}
	for _, c := range f.Caveats {
		fmt.Fprintf(w, "   Caveat: %s\n", wrap(c, 11))
	}
	fmt.Fprintf(w, "   Gain estimate: %s\n", wrap(f.ImpactBasis, 18))
}

func describeInputs(in Inputs) string {
	var parts []string
	if len(in.Profiles) > 0 {
		p := strings.Join(in.Profiles, ", ")
		if in.CPUSamples > 0 {
			p += fmt.Sprintf(" (%d CPU samples over %.0fs)", in.CPUSamples, in.WindowSeconds)
		}
		parts = append(parts, "profiles "+p)
	}
	if in.Metrics {
		parts = append(parts, "runtime statistics")
	}
	if in.JVM != nil {
		parts = append(parts, describeJVM(in.JVM))
	}
	if in.System {
		parts = append(parts, "/proc snapshot")
	}
	if in.Trace {
		parts = append(parts, "execution trace")
	}
	if in.Load {
		parts = append(parts, "load results")
	}
	if in.Runtime != nil && slices.Contains(in.Runtime.Sources, "gctrace") {
		parts = append(parts, "gctrace log")
	}
	if len(parts) == 0 {
		return "none usable"
	}
	return strings.Join(parts, "; ")
}

// timelineLine is the timeline as "1234/5.1ms, ..." (requests/p99).
func timelineLine(secs []LoadSecond) string {
	parts := make([]string, 0, len(secs))
	for _, s := range secs {
		// No space inside an entry, so wrapping splits between seconds.
		parts = append(parts, fmt.Sprintf("%d/%s", s.OK, strings.ReplaceAll(fmtMS(s.P99), " ", "")))
	}
	return wrap(strings.Join(parts, ", "), 4)
}

// describeRuntime is the one-line summary of the collector and scheduler.
func describeRuntime(rt *RuntimeFigures) string {
	var parts []string
	if rt.GCCyclesPerSec > 0 {
		parts = append(parts, fmt.Sprintf("GC %.3g cycles/s", rt.GCCyclesPerSec))
	}
	if rt.GCCPUShare > 0 {
		parts = append(parts, "GC CPU "+rules.Percent(rt.GCCPUShare))
	}
	if rt.GCPauseP99Ms > 0 {
		parts = append(parts, fmt.Sprintf("pause p99 %.3g ms", rt.GCPauseP99Ms))
	}
	if rt.SchedLatencyP99Ms > 0 {
		parts = append(parts, fmt.Sprintf("runnable->running p99 %.3g ms", rt.SchedLatencyP99Ms))
	}
	if rt.GoroutinesCreatedPerSec > 0 {
		parts = append(parts, fmt.Sprintf("goroutines created %s/s", rules.HumanNumber(rt.GoroutinesCreatedPerSec)))
	}
	return strings.Join(parts, ", ") + " (" + strings.Join(rt.Sources, ", ") + ")"
}

// wrap folds long prose at ~100 columns, indenting continuation lines.
func wrap(s string, indent int) string {
	const width = 100
	var b strings.Builder
	col := indent
	for i, word := range strings.Fields(s) {
		if i > 0 {
			if col+1+len(word) > width {
				b.WriteString("\n" + strings.Repeat(" ", indent))
				col = indent
			} else {
				b.WriteByte(' ')
				col++
			}
		}
		b.WriteString(word)
		col += len(word)
	}
	return b.String()
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}

// caveatLine says how a file used was read short of whole.
func caveatLine(f evidence.File) string {
	if f.Partial != "" {
		return fmt.Sprintf("partial input: %s: %s", f.Path, f.Partial)
	}
	return fmt.Sprintf("note: %s: %s", f.Path, f.Note)
}
