package report

import (
	"bufio"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"

	"github.com/perfdoctor/perfdoctor/bundle"
	"github.com/perfdoctor/perfdoctor/evidence"
	"github.com/perfdoctor/perfdoctor/facts"
	"github.com/perfdoctor/perfdoctor/internal/human"
	"github.com/perfdoctor/perfdoctor/rules"
)

// WriteText writes the report for a person at a terminal: the verdict first,
// then each finding with its evidence, locations and fix.
func WriteText(w io.Writer, r *Report) error {
	bw := bufio.NewWriter(w)
	in := r.Inputs
	fmt.Fprintf(bw, "perfdoctor: %s from %s\n", plural(len(r.Findings), "finding"), strings.Join(in.Sources, ", "))
	fmt.Fprintf(bw, "  evidence: %s\n", describeInputs(in))
	if in.Build != nil {
		fmt.Fprintf(bw, "  build: %s\n", describeBuild(in.Build))
	}
	if w := in.Work; w != nil {
		fmt.Fprintf(bw, "  work: %s\n", w.Summary())
	}
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
	refs := newRefs(r.Findings)
	for i, f := range r.Findings {
		causedBy, explains := refs.lines(r.Findings, i)
		writeFinding(bw, refs.label[i], f, causedBy, explains)
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

func writeFinding(w io.Writer, label string, f rules.Finding, causedBy, explains string) {
	// A symptom is indented under its cause.
	indent := strings.Repeat("   ", strings.Count(label, "."))
	w = &indentWriter{w: w, prefix: indent}
	fmt.Fprintf(w, "\n%s. [%s] %s (%s)  est. gain %s of %s\n", label, strings.ToUpper(f.Severity.String()), f.Class, f.Rule, human.Percent(f.Impact), f.Resource)
	fmt.Fprintf(w, "   %s\n", f.Summary)
	if causedBy != "" {
		fmt.Fprintf(w, "   %s\n", wrap(upperFirst(causedBy), 3))
	}
	if explains != "" {
		fmt.Fprintf(w, "   %s\n", wrap(upperFirst(explains), 3))
	}
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
			fmt.Fprintf(w, "     %6s  %-40s %s  (%s)\n", human.Percent(l.Share), rules.ShortFunc(l.Function), pos, l.Role)
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
	basis := f.ImpactBasis
	if m := gainMeaning(f); m != "" {
		basis = m + ". " + upperFirst(basis)
	}
	fmt.Fprintf(w, "   Gain estimate: %s\n", wrap(basis, 18))
	if f.Tried != nil {
		fmt.Fprintf(w, "   Tried: %s\n", wrap(f.Tried.Summary(), 10))
	}
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
	switch {
	case in.TraceWindow != nil:
		parts = append(parts, fmt.Sprintf("execution trace (%s: the %.1fs before the trigger at %s)",
			in.TraceWindow.Source, in.TraceWindow.Seconds, in.TraceWindow.End.UTC().Format("15:04:05.000Z")))
	case in.Trace:
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
func timelineLine(secs []bundle.LoadSecond) string {
	parts := make([]string, 0, len(secs))
	for _, s := range secs {
		// No space inside an entry, so wrapping splits between seconds.
		parts = append(parts, fmt.Sprintf("%d/%s", s.OK, strings.ReplaceAll(human.Millis(s.P99), " ", "")))
	}
	return wrap(strings.Join(parts, ", "), 4)
}

// describeRuntime is the one-line summary of the collector and scheduler.
func describeRuntime(rt *facts.RuntimeFigures) string {
	var parts []string
	if rt.GCCyclesPerSec > 0 {
		parts = append(parts, fmt.Sprintf("GC %.3g cycles/s", rt.GCCyclesPerSec))
	}
	if rt.GCCPUShare > 0 {
		parts = append(parts, "GC CPU "+human.Percent(rt.GCCPUShare))
	}
	if rt.GCPauseP99Ms > 0 {
		p := fmt.Sprintf("pause p99 %.3g ms", rt.GCPauseP99Ms)
		if rt.GCPauseP99Over != "" {
			p += " over " + rt.GCPauseP99Over
		}
		parts = append(parts, p)
	}
	if rt.GCPauseMaxMs > 0 {
		parts = append(parts, fmt.Sprintf("longest pause %.3g ms of %d in the window", rt.GCPauseMaxMs, rt.GCPauses))
	}
	if rt.SchedLatencyP99Ms > 0 {
		parts = append(parts, fmt.Sprintf("runnable->running p99 %.3g ms", rt.SchedLatencyP99Ms))
	}
	if rt.GoroutinesCreatedPerSec > 0 {
		parts = append(parts, fmt.Sprintf("goroutines created %s/s", human.Number(rt.GoroutinesCreatedPerSec)))
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

// indentWriter prefixes every line it writes, so a symptom's block sits
// under its cause.
type indentWriter struct {
	w      io.Writer
	prefix string
	mid    bool // within a line
}

func (iw *indentWriter) Write(p []byte) (int, error) {
	if iw.prefix == "" {
		return iw.w.Write(p)
	}
	var b strings.Builder
	for _, c := range string(p) {
		if !iw.mid && c != '\n' {
			b.WriteString(iw.prefix)
		}
		b.WriteRune(c)
		iw.mid = c != '\n'
	}
	if _, err := io.WriteString(iw.w, b.String()); err != nil {
		return 0, err
	}
	return len(p), nil
}

func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// describeBuild is the target's build in one line: toolchain, experiments,
// the collector, PGO and the modules its Go makes redundant.
func describeBuild(b *bundle.BuildInfo) string {
	parts := []string{b.GoVersion + " (" + b.Source + ")"}
	if len(b.Experiments) > 0 {
		parts = append(parts, "GOEXPERIMENT="+strings.Join(b.Experiments, ","))
	}
	if b.GreenTea() {
		parts = append(parts, "Green Tea GC")
	} else {
		parts = append(parts, "classic GC (no Green Tea)")
	}
	if b.PGO != "" {
		parts = append(parts, "PGO "+filepath.Base(b.PGO))
	} else {
		parts = append(parts, "no PGO")
	}
	for _, r := range b.Redundant() {
		mod, _, _ := strings.Cut(r, ": ")
		parts = append(parts, "redundant "+mod)
	}
	return strings.Join(parts, ", ")
}

// caveatLine says how a file used was read short of whole.
func caveatLine(f evidence.File) string {
	if f.Partial != "" {
		return fmt.Sprintf("partial input: %s: %s", f.Path, f.Partial)
	}
	return fmt.Sprintf("note: %s: %s", f.Path, f.Note)
}
