package verifyreport

import (
	"bytes"
	"context"
	"encoding/xml"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/perfdoctor/perfdoctor/load"
	"github.com/perfdoctor/perfdoctor/verify"
)

// measured is a real verify run: 3 rounds against two loopback servers,
// the after one slower by a millisecond a request, with this process as
// both targets so CPU and peak RSS are read.
func measured(t *testing.T) *verify.Result {
	t.Helper()
	fast := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { burn(w) }))
	defer fast.Close()
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { time.Sleep(time.Millisecond); burn(w) }))
	defer slow.Close()
	cfg := func(u string) load.Config {
		return load.Config{URL: u, Concurrency: 2, Duration: 500 * time.Millisecond}
	}
	v, err := verify.Run(context.Background(), verify.Options{Before: cfg(fast.URL), After: cfg(slow.URL), Rounds: 3,
		PIDs: [2]int{os.Getpid(), os.Getpid()}})
	if err != nil {
		t.Fatal(err)
	}
	if len(v.Rounds) != 3 {
		t.Fatalf("%d rounds", len(v.Rounds))
	}
	for _, r := range v.Rounds {
		if r.BeforeCPU == 0 || r.AfterCPU == 0 || r.BeforePeakRSS == 0 {
			t.Skipf("round %d: this process's CPU time or peak RSS unread (%+v)", r.Round, r)
		}
	}
	return v
}

func TestMarkdown(t *testing.T) {
	v := measured(t)
	var b bytes.Buffer
	if err := Markdown(&b, v, "verify: slower handler"); err != nil {
		t.Fatal(err)
	}
	md := b.String()
	for _, want := range []string{"## verify: slower handler", "**Verdict: " + v.Verdict, "| throughput |", "| CPU/request |", "| peak RSS |",
		"| round | first | throughput before | after |", "| 2 | after |", "xychart-beta", `title "p99 latency per round (ms): before, after"`, `x-axis "round" ["1", "2", "3"]`} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}
	if n := strings.Count(md, "```mermaid"); n != 4 {
		t.Errorf("%d charts, want throughput, p99, CPU/request and peak RSS", n)
	}
	// Each chart's two lines have one point a round.
	for _, m := range regexp.MustCompile(`line \[([^\]]*)\]`).FindAllStringSubmatch(md, -1) {
		if strings.Count(m[1], ",") != 2 {
			t.Errorf("line %q: want 3 points", m[1])
		}
	}
}

func TestHTMLIsWellFormedWithAChartPerFigure(t *testing.T) {
	v := measured(t)
	var b bytes.Buffer
	if err := HTML(&b, v, "verify <run>"); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	if strings.Contains(page, "<script") {
		t.Error("the page has a script; it must need none")
	}
	if !strings.Contains(page, "<title>verify &lt;run&gt;</title>") {
		t.Error("title not escaped")
	}
	// The SVGs are XML: each must parse, and hold a polyline per version
	// and a dot per round and version.
	svgs := regexp.MustCompile(`(?s)<svg.*?</svg>`).FindAllString(page, -1)
	if len(svgs) != 4 {
		t.Fatalf("%d charts, want 4", len(svgs))
	}
	for _, s := range svgs {
		var doc struct {
			Polylines []struct {
				Points string `xml:"points,attr"`
			} `xml:"polyline"`
			Circles []struct{} `xml:"circle"`
		}
		if err := xml.Unmarshal([]byte(s), &doc); err != nil {
			t.Fatalf("chart is not well-formed: %v\n%s", err, s)
		}
		if len(doc.Polylines) != 2 || len(doc.Circles) != 6 || len(strings.Fields(doc.Polylines[0].Points)) != 3 {
			t.Errorf("chart has %d lines and %d dots, want 2 and 6", len(doc.Polylines), len(doc.Circles))
		}
	}
}

func TestLayoutScalesIntoThePlot(t *testing.T) {
	c := layout(series{Name: "x", Before: []float64{100, 100}, After: []float64{100, 100}, format: func(float64) string { return "" }})
	for _, d := range append(c.BeforeDots, c.AfterDots...) {
		if d.Y < padT || d.Y > c.PlotBottom || d.X < c.PlotLeft || d.X > c.PlotRight {
			t.Errorf("flat series: dot %+v outside the plot", d)
		}
	}
	one := layout(series{Name: "x", Before: []float64{5}, After: []float64{7}, format: func(float64) string { return "" }})
	if one.BeforeDots[0].X != (one.PlotLeft+one.PlotRight)/2 {
		t.Errorf("one round: dot not centred: %+v", one.BeforeDots[0])
	}
	if one.AfterDots[0].Y >= one.BeforeDots[0].Y {
		t.Error("the larger value must be drawn higher")
	}
}

// burn spends some CPU a request, so each measurement's CPU time is many
// clock ticks.
func burn(w io.Writer) {
	x := uint64(1)
	for i := range 200_000 {
		x = x*6364136223846793005 + uint64(i)
	}
	fmt.Fprint(w, x)
}
