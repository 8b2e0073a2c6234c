package report

import (
	"embed"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/perfdoctor/perfdoctor/evidence"
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
	for i, f := range r.Findings {
		p.Cards = append(p.Cards, newCard(i+1, f))
	}
	if ev := r.Evidence; ev != nil {
		p.Runtime = runtimeFigures(ev)
		p.Load = readLoad(ev.LoadPath)
	}
	data := pageData{Profiles: flameTrees(r.Evidence, minShare), Marks: marks(r.Findings), Links: opts.PprofLinks}
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
	Load     *loadFigures
	Diff     *Diff
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
	"pct":       rules.Percent,
	"upper":     strings.ToUpper,
	"short":     rules.ShortFunc,
	"base":      filepath.Base,
	"add":       func(a, b int) int { return a + b },
	"sev":       func(s rules.Severity) string { return s.String() },
	"pp":        func(v float64) string { return fmt.Sprintf("%+.1f pp", v*100) },
	"hasPrefix": strings.HasPrefix,
}).ParseFS(assets, "assets/page.html.tmpl"))

// verdict is the one line a newcomer reads first.
func verdict(r *Report) string {
	if len(r.Findings) == 0 {
		return "No findings: nothing in the evidence crosses a rule's threshold."
	}
	f := r.Findings[0]
	return fmt.Sprintf("Found %s. The biggest: %s (%s); fixing it should give back about %s of %s.",
		plural(len(r.Findings), "finding"), f.Class, f.Rule, rules.Percent(f.Impact), f.Resource)
}

// card is one finding as the page shows it.
type card struct {
	Rank int
	rules.Finding
	Locations []cardLocation
	Open      bool
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
		cl := cardLocation{Share: rules.Percent(l.Share), Function: l.Function, Short: rules.ShortFunc(l.Function), Role: l.Role, Path: l.File}
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
			rules.Text("allocation rate", rules.HumanBytes(uint64(gc.AllocBytesSec))+"/s"),
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

// loadFigures is load.json (load.Result's JSON form) as the page shows it.
type loadFigures struct {
	URL         string           `json:"url"`
	Concurrency int              `json:"concurrency"`
	DurationMS  float64          `json:"duration_ms"`
	Requests    int64            `json:"requests"`
	Errors      int64            `json:"errors"`
	ErrorsBy    map[string]int64 `json:"errors_by_kind"`
	Throughput  float64          `json:"throughput_rps"`
	Latency     struct {
		P50  float64 `json:"p50_ms"`
		P90  float64 `json:"p90_ms"`
		P99  float64 `json:"p99_ms"`
		P999 float64 `json:"p999_ms"`
		Max  float64 `json:"max_ms"`
		Mean float64 `json:"mean_ms"`
	} `json:"latency"`
	Interrupted bool `json:"interrupted"`
	Bars        []loadBar
	ErrorKinds  string
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

func readLoad(path string) *loadFigures {
	if path == "" {
		return nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	var l loadFigures
	if json.Unmarshal(b, &l) != nil {
		return nil
	}
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
		l.Bars = append(l.Bars, loadBar{Label: x.label, MS: fmtMS(x.v), W: px, TextX: 50 + px + 6, Y: i * 26})
	}
	var kinds []string
	for k, n := range l.ErrorsBy {
		kinds = append(kinds, fmt.Sprintf("%s=%d", k, n))
	}
	sort.Strings(kinds)
	l.ErrorKinds = strings.Join(kinds, ", ")
	return &l
}

func fmtMS(v float64) string {
	switch {
	case v >= 1000:
		return fmt.Sprintf("%.2f s", v/1000)
	case v >= 1:
		return fmt.Sprintf("%.2f ms", v)
	}
	return fmt.Sprintf("%.0f µs", v*1000)
}
