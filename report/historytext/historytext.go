// Package historytext renders the history database's runs and regressions
// as text for a terminal.
package historytext

import (
	"fmt"
	"io"
	"strings"

	"github.com/perfdoctor/perfdoctor/history"
	"github.com/perfdoctor/perfdoctor/internal/human"
)

// WriteRuns prints, per target, its runs and a row per finding class
// with its impact in each run (- where it was not found).
func WriteRuns(w io.Writer, runs []history.Run) error {
	var b strings.Builder
	for i := 0; i < len(runs); {
		j := i
		for j < len(runs) && runs[j].Target == runs[i].Target {
			j++
		}
		rs := runs[i:j]
		fmt.Fprintf(&b, "%s (%s, %d runs)\n", rs[0].Target, rs[0].Kind, len(rs))
		for k, r := range rs {
			line := fmt.Sprintf("  run %d  %s  %s", k+1, r.At.Format("2006-01-02 15:04:05Z"), r.Tool)
			if r.Cores != nil {
				line += fmt.Sprintf("  %.2f cores", *r.Cores)
			}
			if r.Bundle != "" {
				line += "  " + r.Bundle
			}
			b.WriteString(line + "\n")
		}
		var classes []string
		seen := map[string]bool{}
		for _, r := range rs {
			for _, f := range history.ClassImpacts(r) {
				if !seen[f.Class] {
					seen[f.Class] = true
					classes = append(classes, f.Class)
				}
			}
		}
		if len(classes) == 0 {
			b.WriteString("  no findings in any run\n")
		}
		for _, c := range classes {
			fmt.Fprintf(&b, "  %-24s", c)
			for _, r := range rs {
				v := "-"
				for _, f := range history.ClassImpacts(r) {
					if f.Class == c {
						v = human.Percent(f.Impact)
					}
				}
				fmt.Fprintf(&b, " %7s", v)
			}
			b.WriteString("\n")
		}
		b.WriteString("\n")
		i = j
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteRegressions prints one line per regression, or that there are none.
func WriteRegressions(w io.Writer, regs []history.Regression) {
	if len(regs) == 0 {
		fmt.Fprintln(w, "no regressions: every finding of every latest run is within its noise")
		return
	}
	for _, r := range regs {
		fmt.Fprintf(w, "REGRESSION %s %s (%s): %s now, %s before (mean of %d runs, noise %s, allowed growth %s)\n",
			r.Target, r.Class, r.Rule, human.Percent(r.Latest), human.Percent(r.Mean), r.Earlier, human.Percent(r.Noise), human.Percent(r.Threshold))
	}
}
