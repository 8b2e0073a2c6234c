package report

import (
	"bufio"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/perfdoctor/perfdoctor/facts"
	"github.com/perfdoctor/perfdoctor/internal/human"
	"github.com/perfdoctor/perfdoctor/rules"
)

// DiffHeadline is the diff's one-line verdict.
func DiffHeadline(d *facts.Diff) string {
	if len(d.Growers) == 0 && len(d.Shrinkers) == 0 {
		return fmt.Sprintf("No function's share of %s changed by more than %.1f points from A to B.", d.Kind, facts.MinDelta*100)
	}
	if len(d.Growers) == 0 {
		s := d.Shrinkers[0]
		return fmt.Sprintf("Nothing grew; the biggest shrinker is %s, %s → %s of %s (%s flat).",
			rules.ShortFunc(s.Function), human.Percent(s.FlatA), human.Percent(s.FlatB), d.Kind, ppString(s.FlatDelta))
	}
	g := d.Growers[0]
	if g.CumDelta > g.FlatDelta {
		return fmt.Sprintf("The biggest grower is %s: %s → %s of %s with its callees (%s), flat %s → %s.",
			rules.ShortFunc(g.Function), human.Percent(g.CumA), human.Percent(g.CumB), d.Kind, ppString(g.CumDelta),
			human.Percent(g.FlatA), human.Percent(g.FlatB))
	}
	return fmt.Sprintf("The biggest grower is %s: %s → %s of %s flat (%s).",
		rules.ShortFunc(g.Function), human.Percent(g.FlatA), human.Percent(g.FlatB), d.Kind, ppString(g.FlatDelta))
}

func ppString(v float64) string { return fmt.Sprintf("%+.1f pp", v*100) }

func describeDiff(d *facts.Diff) string {
	side := func(name string, s facts.DiffSide) string {
		v := fmt.Sprintf("%s = %s (total %s", name, s.Source, humanValue(float64(s.Total), d.Unit))
		if s.Duration > 0 {
			v += fmt.Sprintf(" over %.0fs", s.Duration)
		}
		return v + fmt.Sprintf(", %d stacks)", s.Stacks)
	}
	return fmt.Sprintf("%s profiles (%s): %s; %s. Shares are of each profile's own total.", d.Kind, d.Type, side("A", d.A), side("B", d.B))
}

func humanValue(v float64, unit string) string {
	switch unit {
	case "nanoseconds":
		return fmt.Sprintf("%.2fs", v/1e9)
	case "bytes":
		return human.Bytes(uint64(max(v, 0)))
	}
	return human.Number(v)
}

// DiffFormats maps each diff output format to its writer.
var DiffFormats = map[string]func(io.Writer, *facts.Diff) error{
	"text":     WriteDiffText,
	"json":     WriteDiffJSON,
	"html":     WriteDiffHTML,
	"markdown": WriteDiffMarkdown,
}

// DiffFormatNames lists the diff formats for help texts and errors.
func DiffFormatNames() string {
	names := make([]string, 0, len(DiffFormats))
	for n := range DiffFormats {
		names = append(names, n)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

type diffSection struct {
	ID, Title string
	Rows      []facts.FuncDelta
}

func diffSections(d *facts.Diff) []diffSection {
	return []diffSection{
		{"growers", "Biggest growers (share of the total, A → B)", d.Growers},
		{"shrinkers", "Biggest shrinkers", d.Shrinkers},
		{"new", fmt.Sprintf("New hot spots (absent from A, at least %s of B)", human.Percent(facts.HotShare)), d.New},
		{"vanished", fmt.Sprintf("Vanished hot spots (at least %s of A, absent from B)", human.Percent(facts.HotShare)), d.Vanished},
	}
}

// WriteDiffText writes the diff for a terminal.
func WriteDiffText(w io.Writer, d *facts.Diff) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "perfdoctor diff: %s\n  %s\n", DiffHeadline(d), describeDiff(d))
	if d.Regression != "" {
		fmt.Fprintf(bw, "  %s\n", d.Regression)
	}
	for _, s := range diffSections(d) {
		fmt.Fprintf(bw, "\n%s:\n", s.Title)
		if len(s.Rows) == 0 {
			fmt.Fprintln(bw, "  none")
			continue
		}
		fmt.Fprintf(bw, "  %9s  %6s  %6s  %9s  %6s  %6s  %s\n", "Δ flat", "flat A", "flat B", "Δ cum", "cum A", "cum B", "function")
		for _, f := range s.Rows {
			fmt.Fprintf(bw, "  %9s  %6s  %6s  %9s  %6s  %6s  %s\n", ppString(f.FlatDelta), human.Percent(f.FlatA), human.Percent(f.FlatB),
				ppString(f.CumDelta), human.Percent(f.CumA), human.Percent(f.CumB), rules.ShortFunc(f.Function))
		}
	}
	return bw.Flush()
}

// WriteDiffJSON writes the diff as indented JSON.
func WriteDiffJSON(w io.Writer, d *facts.Diff) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(d)
}

// WriteDiffMarkdown writes the diff's tables for a pull request.
func WriteDiffMarkdown(w io.Writer, d *facts.Diff) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "### perfdoctor diff\n\n%s\n\n%s\n", DiffHeadline(d), mdText(describeDiff(d)))
	if d.Regression != "" {
		fmt.Fprintf(bw, "\n> **%s**\n", d.Regression)
	}
	for _, s := range diffSections(d) {
		if len(s.Rows) == 0 {
			continue
		}
		fmt.Fprintf(bw, "\n#### %s\n\n| function | flat A | flat B | Δ flat | cum A | cum B | Δ cum |\n|---|---:|---:|---:|---:|---:|---:|\n", s.Title)
		for _, f := range s.Rows {
			fmt.Fprintf(bw, "| `%s` | %s | %s | %s | %s | %s | %s |\n", mdCell(rules.ShortFunc(f.Function)), human.Percent(f.FlatA), human.Percent(f.FlatB),
				ppString(f.FlatDelta), human.Percent(f.CumA), human.Percent(f.CumB), ppString(f.CumDelta))
		}
	}
	return bw.Flush()
}

// WriteDiffHTML writes a self-contained page: the tables of the biggest
// changes and a differential flame graph (growth red, shrinkage blue).
func WriteDiffHTML(w io.Writer, d *facts.Diff) error {
	p := &htmlPage{
		Title:    "perfdoctor diff",
		Report:   &Report{Tool: cmp.Or(d.Tool, "perfdoctor"), Inputs: Inputs{Sources: []string{"A = " + d.A.Source, "B = " + d.B.Source}}},
		Verdict:  DiffHeadline(d),
		Describe: describeDiff(d),
		Diff:     d,
		DiffRows: diffSections(d),
	}
	data := pageData{Diff: true, Marks: []mark{}}
	if tree := diffTree(d); tree != nil {
		data.Profiles = []*flameTree{tree}
	}
	return renderPage(w, p, data)
}

// diffTree is the differential flame graph of the two sides.
func diffTree(d *facts.Diff) *flameTree {
	if d.StacksA == nil || d.StacksB == nil {
		return nil
	}
	ss := newStackSet(2)
	ss.add(d.StacksA, 0)
	ss.add(d.StacksB, 1)
	tree := ss.build().encode(ss, MinFlameShare)
	tree.Kind, tree.Label = d.Kind, "A → B "+d.Kind
	return tree
}
