package report

import (
	"bytes"
	"encoding/json"
	"html"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/pprof/profile"

	"github.com/perfdoctor/perfdoctor/evidence"
	"github.com/perfdoctor/perfdoctor/internal/human"
	"github.com/perfdoctor/perfdoctor/internal/testprof"
	"github.com/perfdoctor/perfdoctor/report/internal/synth"
)

func htmlOf(t *testing.T, r *Report) string {
	t.Helper()
	var buf bytes.Buffer
	if err := WriteHTML(&buf, r); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

// checkSelfContained fails on anything that would make a browser fetch:
// external scripts, styles, images, fonts, frames, or script-side requests.
func checkSelfContained(t *testing.T, page string) {
	t.Helper()
	for _, re := range []*regexp.Regexp{
		regexp.MustCompile(`(?i)<(script|img|iframe|link|source|video|audio|embed|object)\b[^>]*\b(src|href|data)\s*=`),
		regexp.MustCompile(`(?i)@import|@font-face|url\(`),
		regexp.MustCompile(`\b(fetch|XMLHttpRequest|WebSocket|EventSource|importScripts|sendBeacon)\s*\(`),
		regexp.MustCompile(`\bimport\s*\(`),
	} {
		if m := re.FindString(page); m != "" {
			t.Errorf("the page would reach out: %q", m)
		}
	}
	if !strings.Contains(page, `content="default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:"`) {
		t.Error("no Content-Security-Policy forbidding network access")
	}
}

// pageJSON extracts the data the page's script reads.
func pageJSON(t *testing.T, page string) pageData {
	t.Helper()
	m := regexp.MustCompile(`(?s)<script type="application/json" id="pd-data">(.*?)</script>`).FindStringSubmatch(page)
	if m == nil {
		t.Fatal("no data block")
	}
	var d pageData
	if err := json.Unmarshal([]byte(m[1]), &d); err != nil {
		t.Fatalf("data block: %v", err)
	}
	return d
}

func TestHTMLVerdictFirstAndCardsInOrder(t *testing.T) {
	r := sampleReport(t)
	page := htmlOf(t, r)
	checkSelfContained(t, page)
	verdict := strings.Index(page, `id="verdict"`)
	flame := strings.Index(page, `id="flame"`)
	last := verdict
	for i, f := range r.Findings {
		at := strings.Index(page, `data-rank="`+string(rune('1'+i))+`" data-rule="`+f.Rule+`"`)
		if at < 0 || at < last || at > flame {
			t.Errorf("card %d (%s) at %d, want after %d and before the flame graph at %d", i+1, f.Rule, at, last, flame)
		}
		last = at
	}
	if want := "The biggest: " + r.Findings[0].Class + " (" + r.Findings[0].Rule + ")"; !strings.Contains(page, want) {
		t.Errorf("verdict line %q missing", want)
	}
	d := pageJSON(t, page)
	if len(d.Profiles) != 1 || d.Profiles[0].Kind != "cpu" || d.Profiles[0].Totals[0] != 1000*10_000_000 {
		t.Errorf("profiles = %+v", d.Profiles)
	}
	var marked []string
	for _, m := range d.Marks {
		marked = append(marked, m.Frame)
	}
	if !slices.Contains(marked, "runtime.gcBgMarkWorker") {
		t.Errorf("finding frames not marked: %v", marked)
	}
}

func TestHTMLEscapesEverything(t *testing.T) {
	r := fixedReport("")
	evil := `</script><script>alert(1)</script><img src=x onerror=alert(2)>`
	r.Findings[0].Summary = evil
	r.Findings[0].Frames = []string{evil}
	r.Findings[0].Locations[0].Function = evil
	r.Evidence = testprof.Evidence(map[evidence.Kind]*profile.Profile{evidence.CPU: testprof.Build(
		testprof.Stack{Value: 5, Funcs: []string{evil, "main.main"}},
	)})
	page := htmlOf(t, r)
	if strings.Contains(page, "<script>alert") || strings.Contains(page, "<img src=x") {
		t.Error("markup from the profile or a finding reached the page unescaped")
	}
	checkSelfContained(t, page)
	d := pageJSON(t, page)
	if !slices.Contains(d.Profiles[0].Names, evil) {
		t.Error("the function name did not survive escaping")
	}
}

func TestHTMLWithoutEvidence(t *testing.T) {
	page := htmlOf(t, fixedReport("partial"))
	checkSelfContained(t, page)
	for _, want := range []string{"holds no profiles to draw", "Partial bundle", "trace.out", "Skipped files", "LOCK001", "server.go:133"} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if page := htmlOf(t, fixedReport("no_findings")); !strings.Contains(page, "No findings") {
		t.Error("no 'No findings' verdict")
	}
}

func TestHTMLPprofLinks(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteHTMLWith(&buf, sampleReport(t), HTMLOptions{PprofLinks: map[string]string{"cpu": "/pprof/cpu/"}}); err != nil {
		t.Fatal(err)
	}
	if d := pageJSON(t, buf.String()); d.Links["cpu"] != "/pprof/cpu/" {
		t.Errorf("links = %v", d.Links)
	}
}

// node is a decoded flame tree node, for assertions.
type node struct {
	name        string
	total, self []int64
	kids        []*node
}

func decode(t *testing.T, ft *flameTree) *node {
	t.Helper()
	sides := (ft.Stride - 2) / 2
	var nodes []*node
	for i := 0; i < len(ft.Nodes); i += ft.Stride {
		n := &node{name: "<root>"}
		if id := ft.Nodes[i]; id >= 0 {
			n.name = ft.Names[id]
		}
		for s := range sides {
			n.total = append(n.total, ft.Nodes[i+2+2*s])
			n.self = append(n.self, ft.Nodes[i+3+2*s])
		}
		if p := ft.Nodes[i+1]; p >= 0 {
			if int(p) >= len(nodes) {
				t.Fatalf("node %d has parent %d: not preorder", len(nodes), p)
			}
			nodes[p].kids = append(nodes[p].kids, n)
		} else if len(nodes) != 0 {
			t.Fatal("a second root")
		}
		nodes = append(nodes, n)
	}
	if len(nodes) != ft.Kept {
		t.Fatalf("kept %d, decoded %d", ft.Kept, len(nodes))
	}
	return nodes[0]
}

func (n *node) String() string {
	var b strings.Builder
	var walk func(n *node, depth int)
	walk = func(n *node, depth int) {
		b.WriteString(strings.Repeat("  ", depth))
		b.WriteString(n.name)
		for s := range n.total {
			b.WriteString(" " + itoa(n.total[s]) + "/" + itoa(n.self[s]))
		}
		b.WriteString("\n")
		for _, k := range n.kids {
			walk(k, depth+1)
		}
	}
	walk(n, 0)
	return b.String()
}

func itoa(v int64) string {
	return strings.TrimSpace(strings.Replace(human.Number(float64(v)), ".0", "", 1))
}

func TestFlameTreeMergesByFunction(t *testing.T) {
	// Two locations of b (different lines) and recursion must merge into
	// one call tree by function name, siblings largest first.
	p := testprof.Build(
		testprof.Stack{Value: 3, Funcs: []string{"c", "b", "a"}},
		testprof.Stack{Value: 2, Funcs: []string{"d", "b", "a"}},
		testprof.Stack{Value: 1, Funcs: []string{"a"}},
		testprof.Stack{Value: 4, Funcs: []string{"b", "x"}},
		testprof.Stack{Value: 1, Funcs: []string{"a", "a"}},
	)
	// A second location of b at another line, as inlining or two call
	// sites would give.
	b2 := &profile.Location{ID: 99, Line: []profile.Line{{Function: p.Location[1].Line[0].Function, Line: 77}}}
	p.Location = append(p.Location, b2)
	p.Sample = append(p.Sample, &profile.Sample{Location: []*profile.Location{b2, p.Location[2]}, Value: []int64{2, 2e7}})
	ft := newFlameTree(evidence.CPU, "CPU", p, "samples", MinFlameShare)
	got := decode(t, ft).String()
	want := `<root> 13/0
  a 9/1
    b 7/2
      c 3/3
      d 2/2
    a 1/1
  x 4/0
    b 4/4
`
	if got != want {
		t.Errorf("tree:\n%s\nwant:\n%s", got, want)
	}
	if ft.Stacks != 6 || ft.Pruned != 0 || ft.MaxDepth != 3 {
		t.Errorf("stacks %d pruned %d depth %d", ft.Stacks, ft.Pruned, ft.MaxDepth)
	}
}

func TestFlameTreePrunesSmallNodes(t *testing.T) {
	p := testprof.Build(
		testprof.Stack{Value: 100_000, Funcs: []string{"big", "main"}},
		testprof.Stack{Value: 10, Funcs: []string{"tiny", "small", "main"}}, // 0.01%
		testprof.Stack{Value: 100, Funcs: []string{"kept", "main"}},         // 0.1%
	)
	ft := newFlameTree(evidence.CPU, "CPU", p, "samples", MinFlameShare)
	got := decode(t, ft).String()
	want := "<root> 100.1k/0\n  main 100.1k/0\n    big 100k/100k\n    kept 100/100\n"
	if got != want || ft.Pruned != 2 {
		t.Errorf("pruned %d, tree:\n%s\nwant:\n%s", ft.Pruned, got, want)
	}
}

func TestFlameTreeOf100kStacks(t *testing.T) {
	p := synth.CPU(synth.Options{Stacks: 100_000, Seed: 1, GCShare: 0.3, DialShare: 0.1})
	start := time.Now()
	ft := newFlameTree(evidence.CPU, "CPU", p, "cpu", MinFlameShare)
	took := time.Since(start)
	js, _ := json.Marshal(ft)
	t.Logf("100k stacks: tree built, pruned and encoded in %v: %d nodes kept, %d pruned, %d KiB of JSON",
		took.Round(time.Millisecond), ft.Kept, ft.Pruned, len(js)>>10)
	if ft.Stacks != 100_000 || ft.Kept == 0 || ft.Kept > 20_000 {
		t.Errorf("stacks %d kept %d", ft.Stacks, ft.Kept)
	}
	root := decode(t, ft)
	if root.total[0] != ft.Totals[0] {
		t.Errorf("root total %d, profile total %d", root.total[0], ft.Totals[0])
	}
	// Every kept node reaches the bar and no child outweighs its parent.
	bar := int64(MinFlameShare * float64(ft.Totals[0]))
	var check func(n *node)
	check = func(n *node) {
		var sum int64
		for _, k := range n.kids {
			if k.total[0] < bar || k.total[0] > n.total[0] {
				t.Fatalf("node %s total %d under parent %s %d, bar %d", k.name, k.total[0], n.name, n.total[0], bar)
			}
			sum += k.total[0]
			check(k)
		}
		if sum+n.self[0] > n.total[0] {
			t.Fatalf("%s: children %d + self %d > total %d", n.name, sum, n.self[0], n.total[0])
		}
	}
	check(root)
}

func BenchmarkFlameTree100k(b *testing.B) {
	p := synth.CPU(synth.Options{Stacks: 100_000, Seed: 1, GCShare: 0.3, DialShare: 0.1})
	for b.Loop() {
		newFlameTree(evidence.CPU, "CPU", p, "cpu", MinFlameShare)
	}
}

func BenchmarkWriteHTML100k(b *testing.B) {
	p := synth.CPU(synth.Options{Stacks: 100_000, Seed: 1, GCShare: 0.3, DialShare: 0.1})
	ev := testprof.Evidence(map[evidence.Kind]*profile.Profile{evidence.CPU: p})
	r := diagnosed("perfdoctor bench", ev)
	var buf bytes.Buffer
	for b.Loop() {
		buf.Reset()
		if err := WriteHTML(&buf, r); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(buf.Len()), "bytes")
}

func TestHTMLTemplateTextIsEscapedOnce(t *testing.T) {
	page := htmlOf(t, fixedReport(""))
	if strings.Contains(page, "&amp;amp;") || strings.Contains(page, "&amp;lt;") {
		t.Error("double escaping")
	}
	if !strings.Contains(html.UnescapeString(page), "live × (1 + GOGC/100)") {
		t.Error("fix text lost")
	}
}
