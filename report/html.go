package report

import (
	"embed"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"math"
	"path/filepath"
	"strings"
	"time"

	"github.com/perfdoctor/perfdoctor/bundle"
	"github.com/perfdoctor/perfdoctor/evidence"
	"github.com/perfdoctor/perfdoctor/facts"
	"github.com/perfdoctor/perfdoctor/internal/human"
	"github.com/perfdoctor/perfdoctor/rules"
)

// The page, its style and its scripts are ours, embedded so the report is
// one file that opens with no network: no CDN, no web fonts, no fetches.
//
//go:embed assets/page.html.tmpl assets/style.css assets/flame.js
var assets embed.FS

// HTMLOptions adjusts the HTML page.
type HTMLOptions struct {
	// PprofLinks maps a profile kind to the URL of its pprof web UI, shown
	// beside the flame graph tabs (set by `perfdoctor view`).
	PprofLinks map[string]string
	// MinShare overrides MinFlameShare (0 keeps the default).
	MinShare float64
}

// WriteHTML writes the report as one self-contained HTML page: the
// verdict and ranked finding cards first, then runtime and load figures,
// then interactive flame graphs of every profile in r.Evidence.
func WriteHTML(w io.Writer, r *Report) error { return WriteHTMLWith(w, r, HTMLOptions{}) }

// WriteHTMLWith is WriteHTML with options.
func WriteHTMLWith(w io.Writer, r *Report, opts HTMLOptions) error {
	minShare := opts.MinShare
	if minShare <= 0 {
		minShare = MinFlameShare
	}
	p := &htmlPage{
		Title:    "perfdoctor report",
		Report:   r,
		Verdict:  verdict(r),
		Describe: describeInputs(r.Inputs),
	}
	refs := newRefs(r.Findings)
	ref := func(j int) cardRef {
		return cardRef{Rank: j + 1, Label: refs.label[j], ID: r.Findings[j].ID, Class: r.Findings[j].Class}
	}
	for i, f := range r.Findings {
		c := newCard(i+1, f)
		c.Label = refs.label[i]
		if j, ok := refs.cause(f); ok {
			cause := ref(j)
			c.Cause = &cause
		}
		for _, id := range f.Explains {
			if j, ok := refs.at[id]; ok {
				c.Symptoms = append(c.Symptoms, ref(j))
			}
		}
		p.Cards = append(p.Cards, c)
	}
	p.Load = newLoadView(r.Load)
	if ev := r.Evidence; ev != nil {
		p.Runtime = runtimeFigures(ev)
	}
	data := pageData{Profiles: flameTrees(r.Evidence, r.Facts, minShare), Marks: marks(r.Findings), Links: opts.PprofLinks}
	return renderPage(w, p, data)
}

// htmlPage is what the template reads.
type htmlPage struct {
	Title    string
	Report   *Report
	Verdict  string
	Describe string
	Cards    []card
	Runtime  []figureGroup
	Load     *loadView
	Diff     *facts.Diff
	DiffRows []diffSection
	Data     template.JS
	CSS      template.CSS
	Script   template.JS
	HasFlame bool
}

// pageData is the JSON the script reads.
type pageData struct {
	Diff     bool              `json:"diff"`
	Profiles []*flameTree      `json:"profiles"`
	Marks    []mark            `json:"marks"`
	Links    map[string]string `json:"links,omitempty"`
}

// mark is a function a finding cites, to outline in the flame graph.
type mark struct {
	Frame string   `json:"frame"`
	Rules []string `json:"rules"`
}

func marks(fs []rules.Finding) []mark {
	idx := map[string]int{}
	out := []mark{}
	for _, f := range fs {
		for _, fr := range f.Frames {
			i, ok := idx[fr]
			if !ok {
				i = len(out)
				idx[fr] = i
				out = append(out, mark{Frame: fr})
			}
			if !containsString(out[i].Rules, f.Rule) {
				out[i].Rules = append(out[i].Rules, f.Rule)
			}
		}
	}
	return out
}

func containsString(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

func renderPage(w io.Writer, p *htmlPage, data pageData) error {
	if data.Profiles == nil {
		data.Profiles = []*flameTree{}
	}
	if data.Marks == nil {
		data.Marks = []mark{}
	}
	js, err := json.Marshal(data) // escapes <, > and &: safe inside <script>
	if err != nil {
		return err
	}
	css, err := assets.ReadFile("assets/style.css")
	if err != nil {
		return err
	}
	script, err := assets.ReadFile("assets/flame.js")
	if err != nil {
		return err
	}
	p.Data = template.JS(js)
	p.CSS = template.CSS(css)
	p.Script = template.JS(script)
	p.HasFlame = len(data.Profiles) > 0
	return pageTemplate.Execute(w, p)
}

var pageTemplate = template.Must(template.New("page.html.tmpl").Funcs(template.FuncMap{
	"pct":       human.Percent,
	"upper":     strings.ToUpper,
	"short":     rules.ShortFunc,
	"base":      filepath.Base,
	"add":       func(a, b int) int { return a + b },
	"sev":       func(s rules.Severity) string { return s.String() },
	"pp":        func(v float64) string { return fmt.Sprintf("%+.1f pp", v*100) },
	"hasPrefix": strings.HasPrefix,
	"gain":      gainMeaning,
}).ParseFS(assets, "assets/page.html.tmpl"))

// verdict is the one line a newcomer reads first.
func verdict(r *Report) string {
	if len(r.Findings) == 0 {
		return "No findings: nothing in the evidence crosses a rule's threshold."
	}
	f := r.Findings[0]
	return fmt.Sprintf("Found %s. The biggest: %s (%s); fixing it should give back about %s of %s.",
		plural(len(r.Findings), "finding"), f.Class, f.Rule, human.Percent(f.Impact), f.Resource)
}

// card is one finding as the page shows it.
type card struct {
	Rank  int    // position in the list
	Label string // "2", or "2.1" for a symptom of finding 2
	rules.Finding
	Locations []cardLocation
	Open      bool
	Cause     *cardRef  // the finding this one is a symptom of
	Symptoms  []cardRef // the findings this one explains
}

// cardRef points from one card to another.
type cardRef struct {
	Rank      int
	Label, ID string
	Class     string
}

type cardLocation struct {
	Share    string
	Function string
	Short    string
	Pos      string // file:line, base name
	Path     string // full path
	Role     string
}

func newCard(rank int, f rules.Finding) card {
	c := card{Rank: rank, Finding: f, Open: rank <= 3}
	for _, l := range f.Locations {
		cl := cardLocation{Share: human.Percent(l.Share), Function: l.Function, Short: rules.ShortFunc(l.Function), Role: l.Role, Path: l.File}
		if l.File != "" {
			cl.Pos = filepath.Base(l.File)
			if l.Line > 0 {
				cl.Pos += fmt.Sprintf(":%d", l.Line)
				cl.Path += fmt.Sprintf(":%d", l.Line)
			}
		}
		c.Locations = append(c.Locations, cl)
	}
	return c
}

// figureGroup is a titled list of name/value figures.
type figureGroup struct {
	Title string
	Facts []rules.Fact
}

// runtimeFigures gathers GC and scheduler figures when the evidence has them.
func runtimeFigures(ev *evidence.Evidence) []figureGroup {
	var out []figureGroup
	if gc, ok := ev.GC(); ok {
		g := figureGroup{Title: "Garbage collector over the window"}
		g.Facts = append(g.Facts,
			rules.Count("GC cycles", float64(gc.Cycles), ""),
			rules.Count("cycles per second", round(gc.CyclesPerSec, 2), "/s"),
			rules.Text("stop-the-world pauses", gc.PauseTotal.Round(time.Microsecond).String()),
			rules.Text("allocation rate", human.Bytes(uint64(gc.AllocBytesSec))+"/s"),
			rules.Count("objects allocated per second", round(gc.AllocObjsSec, 0), "/s"),
			rules.Bytes("heap allocated (end)", gc.HeapAlloc),
			rules.Bytes("next GC target", gc.NextGC),
			rules.Text("window", gc.Span.Round(time.Millisecond).String()),
		)
		out = append(out, g)
	}
	s := ev.Settings()
	var sf []rules.Fact
	if s.GoVersion != "" {
		sf = append(sf, rules.Text("Go version", s.GoVersion))
	}
	if s.GOMAXPROCS > 0 {
		v := fmt.Sprint(s.GOMAXPROCS)
		if s.GOMAXPROCSSrc != "" {
			v += " (" + s.GOMAXPROCSSrc + ")"
		}
		sf = append(sf, rules.Text("GOMAXPROCS", v))
	}
	if s.NumCPU > 0 {
		sf = append(sf, rules.Count("CPUs available", float64(s.NumCPU), ""))
	}
	if s.CPUQuota > 0 {
		sf = append(sf, rules.Count("cgroup CPU quota", round(s.CPUQuota, 2), "cores"))
	}
	switch {
	case s.GOGC < 0:
		sf = append(sf, rules.Text("GOGC", "off"))
	case s.GOGC > 0:
		sf = append(sf, rules.Text("GOGC", fmt.Sprint(s.GOGC)))
	}
	if s.GOMEMLIMIT > 0 {
		sf = append(sf, rules.Bytes("GOMEMLIMIT", s.GOMEMLIMIT))
	}
	if s.MemoryLimit > 0 {
		sf = append(sf, rules.Bytes("cgroup memory limit", s.MemoryLimit))
	}
	if p := ev.Profile(evidence.Goroutine); p != nil {
		var n int64
		for _, sm := range p.Sample {
			if len(sm.Value) > 0 {
				n += sm.Value[0]
			}
		}
		sf = append(sf, rules.Count("goroutines (at the end)", float64(n), ""))
	}
	if len(sf) > 0 {
		out = append(out, figureGroup{Title: "Scheduler and runtime settings", Facts: sf})
	}
	return out
}

func round(v float64, digits int) float64 {
	p := math.Pow(10, float64(digits))
	return math.Round(v*p) / p
}

// loadView is the load section of the page: the figures, latency
// percentile bars and the per-second chart.
type loadView struct {
	*bundle.LoadResult
	ErrorKinds string
	Bars       []loadBar
	Chart      *loadChart
}

// loadBar is one latency percentile drawn as a bar (width in % of the
// largest, on a log scale so p50 stays visible beside the maximum).
type loadBar struct {
	Label string
	MS    string
	W     int // pixels
	TextX int
	Y     int
}

// loadChart is latency over time: p50 and p99 per second as lines on a
// log scale, throughput as bars behind them.
type loadChart struct {
	Width, Height int
	P50, P99      string // SVG polyline points
	Bars          []chartBar
	YTicks        []chartTick
	XTicks        []chartTick
	PeakRPS       string
}

type chartBar struct{ X, Y, W, H int }

type chartTick struct {
	Pos   int
	Label string
}

func newLoadView(l *bundle.LoadResult) *loadView {
	if l == nil {
		return nil
	}
	v := &loadView{LoadResult: l, ErrorKinds: errorKinds(l)}
	lat := []struct {
		label string
		v     float64
	}{{"p50", l.Latency.P50}, {"p90", l.Latency.P90}, {"p99", l.Latency.P99}, {"p99.9", l.Latency.P999}, {"max", l.Latency.Max}}
	top := 0.0
	for _, x := range lat {
		top = max(top, x.v)
	}
	for i, x := range lat {
		w := 0.0
		if top > 0 && x.v > 0 {
			// log scale from 1µs to the maximum
			w = math.Max(0.01, math.Log10(x.v*1000+1)/math.Log10(top*1000+1))
		}
		px := int(math.Round(w * 280))
		v.Bars = append(v.Bars, loadBar{Label: x.label, MS: human.Millis(x.v), W: px, TextX: 50 + px + 6, Y: i * 26})
	}
	v.Chart = newLoadChart(l.Timeline)
	return v
}

// newLoadChart lays out the timeline in a 600x180 plot (left margin 60 for
// the latency axis, bottom 20 for seconds).
func newLoadChart(secs []bundle.LoadSecond) *loadChart {
	if len(secs) < 2 {
		return nil
	}
	const w, h, left, bottom = 600, 180, 60, 20
	plotW, plotH := float64(w-left-10), float64(h-bottom-10)
	lo, hi := math.Inf(1), 0.0
	peak := int64(0)
	for _, s := range secs {
		if s.OK > 0 {
			lo, hi = math.Min(lo, s.P50), math.Max(hi, s.P99)
		}
		peak = max(peak, s.OK)
	}
	if hi <= 0 {
		return nil
	}
	// Whole decades of milliseconds around the data.
	lo = math.Pow(10, math.Floor(math.Log10(math.Max(lo, 0.001))))
	hi = math.Pow(10, math.Ceil(math.Log10(hi)))
	if hi <= lo {
		hi = lo * 10
	}
	y := func(ms float64) float64 {
		ms = math.Max(ms, lo)
		return 10 + plotH*(1-(math.Log10(ms)-math.Log10(lo))/(math.Log10(hi)-math.Log10(lo)))
	}
	step := plotW / float64(len(secs))
	c := &loadChart{Width: w, Height: h, PeakRPS: fmt.Sprintf("%d req/s", peak)}
	var p50, p99 []string
	for i, s := range secs {
		x := float64(left) + step*(float64(i)+0.5)
		if peak > 0 && s.OK > 0 {
			bh := plotH * float64(s.OK) / float64(peak)
			c.Bars = append(c.Bars, chartBar{X: int(float64(left) + step*float64(i) + 1), Y: int(10 + plotH - bh), W: max(1, int(step)-2), H: int(bh)})
		}
		if s.OK == 0 {
			continue
		}
		p50 = append(p50, fmt.Sprintf("%.1f,%.1f", x, y(s.P50)))
		p99 = append(p99, fmt.Sprintf("%.1f,%.1f", x, y(s.P99)))
	}
	c.P50, c.P99 = strings.Join(p50, " "), strings.Join(p99, " ")
	for d := lo; d <= hi*1.0001; d *= 10 {
		c.YTicks = append(c.YTicks, chartTick{Pos: int(y(d)), Label: tickMS(d)})
	}
	every := max(1, len(secs)/10)
	for i := 0; i < len(secs); i += every {
		c.XTicks = append(c.XTicks, chartTick{Pos: int(float64(left) + step*(float64(i)+0.5)), Label: fmt.Sprintf("%ds", secs[i].T)})
	}
	return c
}

// tickMS labels a power of ten of milliseconds: "100 µs", "10 ms", "1 s".
func tickMS(v float64) string {
	switch {
	case v >= 1000:
		return fmt.Sprintf("%g s", v/1000)
	case v >= 1:
		return fmt.Sprintf("%g ms", v)
	}
	return fmt.Sprintf("%g µs", math.Round(v*1000))
}
