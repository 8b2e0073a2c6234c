// Package verifyreport writes a verify run as a file a pull request can
// carry: Markdown (tables, and Mermaid charts that GitHub and GitLab draw)
// or one self-contained HTML page whose per-round charts are inline SVG,
// with no script.
package verifyreport

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/perfdoctor/perfdoctor/internal/human"
	"github.com/perfdoctor/perfdoctor/internal/output"
	"github.com/perfdoctor/perfdoctor/verify"
)

// series is one figure per round for both versions.
type series struct {
	Name, Unit    string
	Before, After []float64
	format        func(float64) string
}

// figures are the per-round series verify measured: throughput and p99
// always, CPU per request and peak RSS when every round has them.
func figures(v *verify.Result) []series {
	get := func(name, unit string, format func(float64) string, f func(verify.Round) (float64, float64)) series {
		s := series{Name: name, Unit: unit, format: format}
		for _, r := range v.Rounds {
			b, a := f(r)
			s.Before, s.After = append(s.Before, b), append(s.After, a)
		}
		return s
	}
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	out := []series{
		get("throughput", "req/s", human.Number, func(r verify.Round) (float64, float64) { return r.Before.Throughput, r.After.Throughput }),
		get("p99 latency", "ms", human.Millis, func(r verify.Round) (float64, float64) {
			return ms(r.Before.Latency.P99), ms(r.After.Latency.P99)
		}),
	}
	known := func(f func(verify.Round) (float64, float64)) bool {
		for _, r := range v.Rounds {
			if b, a := f(r); b <= 0 || a <= 0 {
				return false
			}
		}
		return len(v.Rounds) > 0
	}
	cpu := func(r verify.Round) (float64, float64) { return r.BeforeCPU, r.AfterCPU }
	if known(cpu) {
		out = append(out, get("CPU/request", "µs", func(x float64) string { return human.Number(x) + " µs" }, cpu))
	}
	rss := func(r verify.Round) (float64, float64) { return float64(r.BeforePeakRSS), float64(r.AfterPeakRSS) }
	if known(rss) {
		out = append(out, get("peak RSS", "MiB", func(x float64) string { return human.Number(x) + " MiB" },
			func(r verify.Round) (float64, float64) { b, a := rss(r); return b / (1 << 20), a / (1 << 20) }))
	}
	return out
}

// Markdown writes the verdict, the after/before ratios with their
// intervals, a table of the rounds and a Mermaid xychart per figure.
func Markdown(w io.Writer, v *verify.Result, title string) error {
	var b bytes.Buffer
	fmt.Fprintf(&b, "## %s\n\n**Verdict: %s**", title, v.Verdict)
	if v.Why != "" {
		fmt.Fprintf(&b, " (%s)", v.Why)
	}
	fmt.Fprintf(&b, "\n\nbefore `%s`, after `%s`, %d rounds; %s; load average %.2f.\n\n", v.Before, v.After, len(v.Rounds), v.Method, v.LoadAvg)
	b.WriteString("| figure | after/before | 95% interval | change |\n|---|---|---|---|\n")
	for _, r := range v.Ratios {
		fmt.Fprintf(&b, "| %s | %.3fx | %.3f - %.3f | %s |\n", r.Figure, r.Estimate, r.Low, r.High, r.Change)
	}
	figs := figures(v)
	b.WriteString("\n| round | first |")
	for _, s := range figs {
		fmt.Fprintf(&b, " %s before | after |", s.Name)
	}
	b.WriteString("\n|---|---|" + strings.Repeat("---|---|", len(figs)) + "\n")
	for i, r := range v.Rounds {
		fmt.Fprintf(&b, "| %d | %s |", r.Round, r.First)
		for _, s := range figs {
			fmt.Fprintf(&b, " %s | %s |", s.format(s.Before[i]), s.format(s.After[i]))
		}
		b.WriteString("\n")
	}
	for _, s := range figs {
		if len(v.Rounds) == 0 {
			break
		}
		// Mermaid draws the two series in its palette's first two colours;
		// the chart title names them in order.
		fmt.Fprintf(&b, "\n```mermaid\nxychart-beta\n  title \"%s per round (%s): before, after\"\n  x-axis \"round\" [", s.Name, s.Unit)
		for i := range v.Rounds {
			if i > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "%q", fmt.Sprint(i+1))
		}
		fmt.Fprintf(&b, "]\n  y-axis \"%s\"\n  line [%s]\n  line [%s]\n```\n", s.Unit, numbers(s.Before), numbers(s.After))
	}
	for _, warn := range v.Warnings {
		fmt.Fprintf(&b, "\n> warning: %s\n", warn)
	}
	_, err := w.Write(b.Bytes())
	return err
}

func numbers(xs []float64) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = fmt.Sprintf("%.4g", x)
	}
	return strings.Join(parts, ", ")
}

//go:embed page.html.tmpl
var pageTemplate string

var page = template.Must(template.New("verify").Funcs(template.FuncMap{
	"sub1":  func(x float64) float64 { return x - 6 },  // y labels left of the axis
	"add16": func(x float64) float64 { return x + 16 }, // x labels under it
}).Parse(pageTemplate))

// Chart geometry, in SVG user units.
const (
	chartW, chartH = 420, 180
	padL, padR     = 64, 12
	padT, padB     = 12, 28
)

// chart is one figure's SVG, laid out here so the template only places it.
type chart struct {
	Name, Unit            string
	Before, After         string // polyline points
	BeforeDots, AfterDots []point
	YTicks                []tick
	XTicks                []tick
	W, H                  int
	PlotBottom, PlotLeft  float64
	PlotRight             float64
}

type point struct {
	X, Y  float64
	Label string
}

type tick struct {
	Pos   float64
	Label string
}

// layout scales a series into chart coordinates: y from a rounded floor
// below the smallest value (not zero, so a few percent of change shows)
// to the largest.
func layout(s series) chart {
	c := chart{Name: s.Name, Unit: s.Unit, W: chartW, H: chartH, PlotLeft: padL, PlotRight: chartW - padR, PlotBottom: chartH - padB}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, x := range append(append([]float64(nil), s.Before...), s.After...) {
		lo, hi = math.Min(lo, x), math.Max(hi, x)
	}
	if math.IsInf(lo, 0) {
		return c
	}
	span := hi - lo
	if span == 0 {
		span = math.Max(math.Abs(hi)*0.1, 1)
	}
	lo, hi = math.Max(0, lo-span*0.15), hi+span*0.15
	n := len(s.Before)
	x := func(i int) float64 {
		if n == 1 {
			return (c.PlotLeft + c.PlotRight) / 2
		}
		return c.PlotLeft + float64(i)*(c.PlotRight-c.PlotLeft)/float64(n-1)
	}
	y := func(v float64) float64 { return c.PlotBottom - (v-lo)/(hi-lo)*(c.PlotBottom-padT) }
	line := func(vs []float64) (string, []point) {
		var pts []string
		var dots []point
		for i, v := range vs {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", x(i), y(v)))
			dots = append(dots, point{x(i), y(v), fmt.Sprintf("round %d: %s", i+1, s.format(v))})
		}
		return strings.Join(pts, " "), dots
	}
	c.Before, c.BeforeDots = line(s.Before)
	c.After, c.AfterDots = line(s.After)
	for k := range 3 {
		v := lo + float64(k)*(hi-lo)/2
		c.YTicks = append(c.YTicks, tick{y(v), human.Number(v)})
	}
	for i := range n {
		c.XTicks = append(c.XTicks, tick{x(i), fmt.Sprint(i + 1)})
	}
	return c
}

// HTML writes one self-contained page: verdict, ratios with their
// intervals, a chart per figure and the rounds' table.
func HTML(w io.Writer, v *verify.Result, title string) error {
	type cell struct{ Before, After string }
	type row struct {
		Round int
		First string
		Cells []cell
	}
	type ratio struct{ Figure, Ratio, Interval, Change, Class string }
	figs := figures(v)
	var charts []chart
	var rows []row
	var ratios []ratio
	for _, s := range figs {
		charts = append(charts, layout(s))
	}
	for i, r := range v.Rounds {
		rw := row{Round: r.Round, First: r.First}
		for _, s := range figs {
			rw.Cells = append(rw.Cells, cell{s.format(s.Before[i]), s.format(s.After[i])})
		}
		rows = append(rows, rw)
	}
	for _, r := range v.Ratios {
		ratios = append(ratios, ratio{r.Figure, fmt.Sprintf("%.3fx (%+.1f%%)", r.Estimate, (r.Estimate-1)*100),
			fmt.Sprintf("%.3f - %.3f", r.Low, r.High), r.Change, r.Change})
	}
	var b bytes.Buffer
	if err := page.Execute(&b, map[string]any{"Title": title, "V": v, "Charts": charts, "Figures": figs, "Rows": rows, "Ratios": ratios}); err != nil {
		return fmt.Errorf("verify report: %w", err)
	}
	_, err := w.Write(b.Bytes())
	return err
}

// Formats are the forms Write knows.
var Formats = []string{"json", "markdown", "html"}

// Write writes v in format: json (docs/verify.md), markdown or html.
func Write(w io.Writer, format string, v *verify.Result, title string) error {
	switch format {
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	case "markdown":
		return Markdown(w, v, title)
	case "html":
		return HTML(w, v, title)
	}
	return fmt.Errorf("verify report: unknown format %q", format)
}

// Save writes verify.json, verify.md and verify.html into dir (created if
// needed), each file atomically, and returns their paths. They are private
// (0600) when new: they name the targets' URLs as typed, credentials and all.
func Save(dir string, v *verify.Result, title string) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("verify report: %w", err)
	}
	var paths []string
	for _, f := range []struct{ format, name string }{{"json", "verify.json"}, {"markdown", "verify.md"}, {"html", "verify.html"}} {
		var b bytes.Buffer
		if err := Write(&b, f.format, v, title); err != nil {
			return paths, err
		}
		p := filepath.Join(dir, f.name)
		if err := output.WriteFile(p, output.Private, b.Bytes()); err != nil {
			return paths, err
		}
		paths = append(paths, p)
	}
	return paths, nil
}
