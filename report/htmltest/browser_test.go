package htmltest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/perfdoctor/perfdoctor/diagnose"
	"github.com/perfdoctor/perfdoctor/facts"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/google/pprof/profile"

	"github.com/perfdoctor/perfdoctor/evidence"
	"github.com/perfdoctor/perfdoctor/internal/testprof"
	"github.com/perfdoctor/perfdoctor/report"
	"github.com/perfdoctor/perfdoctor/report/internal/synth"
)

// bigStacks is the size of the profile whose render is timed.
const bigStacks = 100_000

func inCI() bool {
	v := strings.ToLower(os.Getenv("CI"))
	return v != "" && v != "false" && v != "0"
}

func chromiumPath() string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// startBrowser starts headless Chromium with every network path closed: a
// proxy nobody listens on, and a resolver that resolves nothing. Cleanup
// ends the browser process.
func startBrowser(t *testing.T) context.Context {
	t.Helper()
	path := chromiumPath()
	if path == "" {
		if inCI() {
			t.Fatal("CI is set and chromium is not installed: scripts/test.sh installs it (apt-get install -y chromium)")
		}
		t.Skip("chromium is not installed; scripts/test.sh installs it (apt-get install -y chromium). Skipping the browser test.")
	}
	profileDir, err := os.MkdirTemp("", "perfdoctor-chromium-")
	if err != nil {
		t.Fatal(err)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.Flag("headless", "new"),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.ProxyServer("127.0.0.1:9"),
		chromedp.Flag("host-resolver-rules", "MAP * ~NOTFOUND"),
		chromedp.WindowSize(1280, 1000),
		chromedp.UserDataDir(profileDir),
		// Chromium puts its singleton socket directory in TMPDIR: inside
		// the profile, so the cleanup removes it too.
		chromedp.Env("TMPDIR="+profileDir),
	)
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	browserCtx, cancelBrowser := chromedp.NewContext(allocCtx)
	t.Cleanup(func() {
		cancelBrowser() // closes the browser and waits for its process
		cancelAlloc()
		cancel()
		for range 50 { // Chromium's children may still write for a moment
			if os.RemoveAll(profileDir) == nil {
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
	})
	if _, err := chromedp.Run(browserCtx, chromedp.Evaluate[int](`1`)); err != nil {
		t.Fatalf("starting %s: %v", path, err)
	}
	return browserCtx
}

// page is one tab showing a report file, with what it requested and threw.
type page struct {
	t          *testing.T
	ctx        context.Context
	mu         sync.Mutex
	requests   []string
	exceptions []string
}

func openPage(t *testing.T, browser context.Context, file string) *page {
	t.Helper()
	p := navigate(t, browser, file)
	p.wait(`window.perfdoctor && window.perfdoctor.ready`)
	return p
}

// navigate opens file in a new tab, recording what the page requests and
// throws.
func navigate(t *testing.T, browser context.Context, file string) *page {
	t.Helper()
	tab, cancel := chromedp.NewContext(browser)
	t.Cleanup(cancel)
	p := &page{t: t, ctx: tab}
	err := chromedp.Listen(tab, func(ev any) {
		p.mu.Lock()
		defer p.mu.Unlock()
		switch e := ev.(type) {
		case *network.EventRequestWillBeSent:
			p.requests = append(p.requests, e.Request.URL)
		case *runtime.EventExceptionThrown:
			p.exceptions = append(p.exceptions, (&chromedp.ExceptionError{ExceptionDetails: e.ExceptionDetails}).Error())
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Call(tab, network.Enable, network.EnableParams{}); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(tab, chromedp.Navigate("file://"+file)); err != nil {
		t.Fatalf("navigate: %v", err)
	}
	return p
}

func (p *page) do(actions ...chromedp.Action[chromedp.Void]) {
	p.t.Helper()
	if err := chromedp.Do(p.ctx, actions...); err != nil {
		p.t.Fatal(err)
	}
}

func eval[T any](p *page, js string) T {
	p.t.Helper()
	v, err := chromedp.Run(p.ctx, chromedp.Evaluate[T](js))
	if err != nil {
		p.t.Fatalf("%s: %v", js, err)
	}
	return v
}

func (p *page) wait(js string) {
	p.t.Helper()
	if _, err := chromedp.Run(p.ctx, chromedp.Poll[chromedp.Void](js, chromedp.WithPollingTimeout(15*time.Second))); err != nil {
		p.t.Fatalf("waiting for %s: %v", js, err)
	}
}

// checkOffline fails if the page asked for anything but itself.
func (p *page) checkOffline(file string) {
	p.t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, u := range p.requests {
		if u != "file://"+file {
			p.t.Errorf("the page requested %s; a report must not touch the network or other files", u)
		}
	}
	for _, e := range p.exceptions {
		p.t.Errorf("script error: %s", e)
	}
}

// clickBox scrolls the flame graph into view and clicks, as a person does,
// the middle of the widest box at the given depth; it returns its name.
func (p *page) clickBox(depth int, contains string) string {
	p.t.Helper()
	type box struct {
		X, Y float64
		Name string
	}
	b := eval[*box](p, fmt.Sprintf(`(() => {
		const c = document.getElementById('flame-canvas');
		c.scrollIntoView({block: 'start'});
		const b = perfdoctor.flame.boxFor(%d, %q);
		if (!b) return null;
		const r = c.getBoundingClientRect();
		return {x: r.left + b.x + b.w / 2, y: r.top + b.y + b.h / 2, name: b.name};
	})()`, depth, contains))
	if b == nil {
		p.t.Fatalf("no box at depth %d containing %q", depth, contains)
	}
	p.do(chromedp.MouseClickXY(b.X, b.Y))
	return b.Name
}

// paintedPixels counts the canvas pixels that are not blank.
func (p *page) paintedPixels() int {
	return eval[int](p, `(() => {
		const c = document.getElementById('flame-canvas');
		if (!c.width || !c.height) return 0;
		const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
		let n = 0;
		for (let i = 3; i < d.length; i += 4) if (d[i] !== 0) n++;
		return n;
	})()`)
}

func artifactDir(t *testing.T) string {
	if d := os.Getenv("PERFDOCTOR_ARTIFACTS"); d != "" {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		return d
	}
	return t.TempDir()
}

func (p *page) screenshot(name string, full bool) {
	p.t.Helper()
	var png []byte
	var err error
	if full {
		png, err = chromedp.Run(p.ctx, chromedp.FullScreenshot(100))
	} else {
		png, err = chromedp.Run(p.ctx, chromedp.Screenshot(chromedp.CSS("#flame")))
	}
	if err != nil {
		p.t.Fatalf("screenshot: %v", err)
	}
	path := filepath.Join(artifactDir(p.t), name)
	if err := os.WriteFile(path, png, 0o644); err != nil {
		p.t.Fatal(err)
	}
	p.t.Logf("screenshot: %s (%d KiB)", path, len(png)>>10)
}

func writeReport(t *testing.T, r *report.Report) (string, int) {
	t.Helper()
	var buf bytes.Buffer
	if err := report.WriteHTML(&buf, r); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "report.html")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path, buf.Len()
}

// bigReport diagnoses a generated 100k-stack CPU profile (with GC and
// dialing for the rules to find) plus an allocs profile.
func bigReport(t *testing.T) *report.Report {
	cpu := synth.CPU(synth.Options{Stacks: bigStacks, Seed: 1, GCShare: 0.3, DialShare: 0.1})
	allocs := synth.Allocs(2000, 2)
	ev := testprof.Evidence(map[evidence.Kind]*profile.Profile{evidence.CPU: cpu, evidence.Allocs: allocs})
	r, err := diagnose.Run(t.Context(), diagnose.Request{Evidence: ev, Tool: "perfdoctor test"})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Findings) < 2 {
		t.Fatalf("want at least 2 findings to check their order, got %d", len(r.Findings))
	}
	return r
}

func TestHTMLReportInBrowser(t *testing.T) {
	browser := startBrowser(t)
	r := bigReport(t)
	start := time.Now()
	file, size := writeReport(t, r)
	t.Logf("HTML report of %d CPU stacks: %d KiB, written in %v", bigStacks, size>>10, time.Since(start).Round(time.Millisecond))

	p := openPage(t, browser, file)

	// Verdict first, then the finding cards in rank order.
	type cardInfo struct{ Rank, Rule, Top string }
	cards := eval[[]cardInfo](p, `Array.from(document.querySelectorAll('article.finding')).map(e => ({
		rank: e.dataset.rank, rule: e.dataset.rule, top: String(Math.round(e.getBoundingClientRect().top))}))`)
	if len(cards) != len(r.Findings) {
		t.Fatalf("%d finding cards, want %d", len(cards), len(r.Findings))
	}
	for i, c := range cards {
		if c.Rank != fmt.Sprint(i+1) || c.Rule != r.Findings[i].Rule {
			t.Errorf("card %d is rank %s rule %s, want rank %d rule %s", i, c.Rank, c.Rule, i+1, r.Findings[i].Rule)
		}
	}
	verdictTop := eval[float64](p, `document.getElementById('verdict').getBoundingClientRect().top`)
	flameTop := eval[float64](p, `document.getElementById('flame').getBoundingClientRect().top + scrollY`)
	if cardTop := eval[float64](p, `document.querySelector('article.finding').getBoundingClientRect().top`); !(verdictTop < cardTop && cardTop < flameTop) {
		t.Errorf("layout: verdict at %v, first card at %v, flame graph at %v; want that order", verdictTop, cardTop, flameTop)
	}
	if h1 := eval[string](p, `document.querySelector('#verdict h1').textContent`); !strings.Contains(h1, r.Findings[0].Class) {
		t.Errorf("verdict %q does not name the top finding %s", h1, r.Findings[0].Class)
	}

	// The flame graph is drawn: boxes laid out and pixels painted.
	boxes := eval[int](p, `perfdoctor.flame.boxes()`)
	if boxes < 50 {
		t.Errorf("%d boxes drawn", boxes)
	}
	if px := p.paintedPixels(); px < 10_000 {
		t.Errorf("flame canvas has %d painted pixels", px)
	}
	type timings struct {
		ParseMs, DecodeMs, LayoutMs, DrawMs, FirstDrawAt, ReadyAt float64
		Boxes                                                     int
	}
	tm := eval[timings](p, `perfdoctor.timings`)
	nav := eval[float64](p, `performance.getEntriesByType('navigation')[0].domInteractive`)
	t.Logf("render of %d stacks in headless Chromium: first flame graph drawn %.0f ms after navigation start "+
		"(DOM interactive %.0f ms; JSON parse %.1f ms, tree decode %.1f ms, layout %.1f ms, draw %.1f ms, %d boxes)",
		bigStacks, tm.FirstDrawAt, nav, tm.ParseMs, tm.DecodeMs, tm.LayoutMs, tm.DrawMs, tm.Boxes)
	p.screenshot("report-100k.png", true)

	// Hovering shows a tooltip with self and total shares.
	hover := eval[[]float64](p, `(() => {
		const c = document.getElementById('flame-canvas'); c.scrollIntoView({block: 'start'});
		const b = perfdoctor.flame.boxFor(1, ''); const r = c.getBoundingClientRect();
		return [r.left + b.x + b.w / 2, r.top + b.y + b.h / 2];
	})()`)
	p.do(chromedp.MouseEvent("mouseMoved", hover[0], hover[1]))
	p.wait(`!document.getElementById('flame-tip').hidden`)
	if tip := eval[string](p, `document.getElementById('flame-tip').textContent`); !strings.Contains(tip, "total:") || !strings.Contains(tip, "self:") {
		t.Errorf("tooltip %q lacks total and self", tip)
	}

	// Clicking a box zooms: it then spans the whole width.
	width := eval[float64](p, `document.getElementById('flame-canvas').clientWidth`)
	name := p.clickBox(2, "")
	p.wait(`perfdoctor.flame.focusName() !== 'all (CPU)'`)
	if got := eval[string](p, `perfdoctor.flame.focusName()`); got != name {
		t.Errorf("clicked %q, zoomed to %q", name, got)
	}
	type boxJS struct{ X, W float64 }
	zoomed := eval[boxJS](p, fmt.Sprintf(`perfdoctor.flame.boxFor(2, %q)`, name))
	if zoomed.X > 0.5 || math.Abs(zoomed.W-width) > 1 {
		t.Errorf("zoomed box at x=%v w=%v, want it to fill the width %v", zoomed.X, zoomed.W, width)
	}
	if label := eval[string](p, `document.getElementById('flame-zoom').textContent`); !strings.Contains(label, "Zoomed to") {
		t.Errorf("zoom label %q", label)
	}
	tz := eval[timings](p, `perfdoctor.timings`)
	t.Logf("zoom redraw: layout %.1f ms, draw %.1f ms, %d boxes", tz.LayoutMs, tz.DrawMs, tz.Boxes)
	p.do(chromedp.Click(chromedp.CSS("#flame-reset")))
	p.wait(`perfdoctor.flame.focusName() === 'all (CPU)'`)

	// Typing in the search box highlights matches and shows their share.
	p.do(chromedp.SendKeys(chromedp.CSS("#flame-search"), "scanObject"))
	p.wait(`/of the total/.test(document.getElementById('flame-match').textContent)`)
	match := eval[string](p, `document.getElementById('flame-match').textContent`)
	share := eval[float64](p, `perfdoctor.flame.matchShare`)
	if !regexp.MustCompile(`\d+ functions? match: [<\d.]+% of the total`).MatchString(match) || share <= 0 || share >= 1 {
		t.Errorf("search result %q, share %v", match, share)
	}
	hits := eval[int](p, `(() => { const c = document.getElementById('flame-canvas');
		const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data; let n = 0;
		for (let i = 0; i < d.length; i += 4) if (d[i] === 0xe6 && d[i+1] === 0x00 && d[i+2] === 0x7e) n++; return n; })()`)
	if hits == 0 {
		t.Error("no highlighted pixels after the search")
	}
	p.screenshot("flame-search.png", false)

	// A finding card's button shows the functions it cites.
	p.do(chromedp.Click(chromedp.CSS("article.finding .show-frames")))
	p.wait(`document.getElementById('flame-search').value.startsWith('^')`)
	if m := eval[string](p, `document.getElementById('flame-match').textContent`); !strings.Contains(m, "% of the total") {
		t.Errorf("after 'show in flame graph': %q", m)
	}

	// The allocation profile is a tab away.
	p.do(chromedp.Click(chromedp.CSS(`#flame-tabs button[data-kind="allocs"]`)))
	p.wait(`document.querySelector('#flame-tabs button[data-kind="allocs"]').getAttribute('aria-selected') === 'true'`)
	if n := eval[int](p, `perfdoctor.flame.boxes()`); n < 10 {
		t.Errorf("allocs flame graph: %d boxes", n)
	}
	p.checkOffline(file)
}

func TestRealProfileInBrowser(t *testing.T) {
	browser := startBrowser(t)
	cpu := testprof.CPU(t, 300*time.Millisecond, 2, func() {
		var b []byte
		for i := range 2000 {
			b = fmt.Appendf(b[:0], "%d-%s", i, strings.Repeat("x", i%64))
		}
		_, _ = json.Marshal(b)
	})
	ev := testprof.Evidence(map[evidence.Kind]*profile.Profile{evidence.CPU: cpu})
	r, err := diagnose.Run(t.Context(), diagnose.Request{Evidence: ev, Tool: "perfdoctor test"})
	if err != nil {
		t.Fatal(err)
	}
	file, _ := writeReport(t, r)
	p := openPage(t, browser, file)
	if n := eval[int](p, `document.querySelectorAll('article.finding').length`); n != len(r.Findings) {
		t.Errorf("%d cards, want %d", n, len(r.Findings))
	}
	if p.paintedPixels() == 0 {
		t.Error("flame graph of a real profile not drawn")
	}
	p.checkOffline(file)
}

func TestDiffInBrowser(t *testing.T) {
	browser := startBrowser(t)
	a := synth.CPU(synth.Options{Stacks: 5000, Seed: 3, GCShare: 0.1})
	b := synth.CPU(synth.Options{Stacks: 5000, Seed: 3, GCShare: 0.4})
	d, err := facts.Compare(a, b, evidence.CPU)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := report.WriteDiffHTML(&buf, d); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "diff.html")
	if err := os.WriteFile(file, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	p := openPage(t, browser, file)
	if n := eval[int](p, `document.querySelectorAll('table.diff-table[data-section="growers"] tbody tr').length`); n == 0 {
		t.Error("no growers table")
	}
	// Growth is drawn red, shrinkage blue.
	reds := eval[[]int](p, `(() => { const c = document.getElementById('flame-canvas');
		const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data; let red = 0, blue = 0;
		for (let i = 0; i < d.length; i += 4) { if (d[i] > d[i+2] + 60 && d[i] > d[i+1] + 60) red++; if (d[i+2] > d[i] + 60) blue++; }
		return [red, blue]; })()`)
	if reds[0] == 0 || reds[1] == 0 {
		t.Errorf("differential flame graph: %d red and %d blue pixels, want both", reds[0], reds[1])
	}
	p.screenshot("diff.png", true)
	p.checkOffline(file)
}
