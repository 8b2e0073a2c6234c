package htmltest

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/perfdoctor/perfdoctor/load"
	"github.com/perfdoctor/perfdoctor/report/verifyreport"
	"github.com/perfdoctor/perfdoctor/verify"
)

// TestVerifyReportInChromium opens verify's HTML report of a real run in
// Chromium: the charts are laid out, one dot a round and version, inside
// their boxes, and the page needs nothing but itself.
func TestVerifyReportInChromium(t *testing.T) {
	browser := startBrowser(t)
	fast := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, spin()) }))
	defer fast.Close()
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { time.Sleep(time.Millisecond); fmt.Fprint(w, spin()) }))
	defer slow.Close()
	cfg := func(u string) load.Config {
		return load.Config{URL: u, Concurrency: 2, Duration: 500 * time.Millisecond}
	}
	v, err := verify.Run(context.Background(), verify.Options{Before: cfg(fast.URL), After: cfg(slow.URL), Rounds: 4,
		PIDs: [2]int{os.Getpid(), os.Getpid()}})
	if err != nil {
		t.Fatal(err)
	}
	figures := 4 // throughput, p99, CPU/request and peak RSS
	for _, r := range v.Rounds {
		if r.BeforeCPU == 0 || r.AfterCPU == 0 {
			figures = 3 // too little CPU time for a clock tick: no CPU chart
		}
	}
	file := filepath.Join(t.TempDir(), "verify.html")
	f, err := os.Create(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := verifyreport.HTML(f, v, "verify"); err != nil {
		t.Fatal(err)
	}
	f.Close()

	p := navigate(t, browser, file)
	p.wait(`document.readyState === 'complete'`)
	type box struct{ W, H float64 }
	charts := eval[[]box](p, `[...document.querySelectorAll('svg.round-chart')].map(s => { const r = s.getBoundingClientRect(); return {w: r.width, h: r.height}; })`)
	if len(charts) != figures {
		t.Fatalf("%d charts drawn, want %d", len(charts), figures)
	}
	for i, c := range charts {
		if c.W < 100 || c.H < 50 {
			t.Errorf("chart %d laid out %gx%g", i, c.W, c.H)
		}
	}
	// Every dot lies inside its chart as Chromium placed it.
	outside := eval[int](p, `[...document.querySelectorAll('svg.round-chart')].reduce((n, s) => {
		const r = s.getBoundingClientRect();
		return n + [...s.querySelectorAll('circle')].filter(c => { const d = c.getBoundingClientRect();
			return d.width === 0 || d.left < r.left || d.right > r.right || d.top < r.top || d.bottom > r.bottom; }).length;
	}, 0)`)
	dots := eval[int](p, `document.querySelectorAll('svg.round-chart circle').length`)
	if dots != figures*2*4 || outside != 0 {
		t.Errorf("%d dots (want %d), %d outside their chart", dots, figures*8, outside)
	}
	// The lines are lines: no polyline may be filled into an area.
	if filled := eval[int](p, `[...document.querySelectorAll('svg.round-chart polyline')].filter(l => getComputedStyle(l).fill !== 'none').length`); filled != 0 {
		t.Errorf("%d polylines are filled", filled)
	}
	verdict := eval[string](p, `document.getElementById('verdict').innerText`)
	if !strings.Contains(verdict, v.Verdict) {
		t.Errorf("verdict shown %q, want %q", verdict, v.Verdict)
	}
	if rows := eval[int](p, `document.querySelectorAll('#rounds tr').length`); rows != 5 {
		t.Errorf("rounds table has %d rows, want a header and 4 rounds", rows)
	}
	p.checkOffline(file)
}

// spin spends some CPU a request, so each measurement's CPU time is many
// clock ticks.
func spin() uint64 {
	x := uint64(1)
	for i := range 200_000 {
		x = x*6364136223846793005 + uint64(i)
	}
	return x
}
