package overhead

import (
	"context"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/perfdoctor/perfdoctor/load"
)

// Run rotates the modes' order over the rounds, runs each mode's start and
// stop around its own measurement only, and compares every mode with the
// baseline; against a real loopback server, in short rounds.
func TestRunRotatesModesAndComparesWithTheBaseline(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok")) }))
	defer srv.Close()
	var events []string
	mode := func(name string) Mode {
		return Mode{Name: name, Start: func(context.Context) (func() error, error) {
			events = append(events, "start "+name)
			return func() error { events = append(events, "stop "+name); return nil }, nil
		}}
	}
	res, err := Run(t.Context(), Options{
		Load:   load.Config{URL: srv.URL, Concurrency: 2},
		PID:    os.Getpid(),
		Modes:  []Mode{{Name: "baseline"}, mode("a"), mode("b")},
		Rounds: 3, Duration: 150 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	want := "start a,stop a,start b,stop b," + // round 1: baseline, a, b
		"start a,stop a,start b,stop b," + // round 2: a, b, baseline
		"start b,stop b,start a,stop a" // round 3: b, baseline, a
	if got := strings.Join(events, ","); got != want {
		t.Errorf("events %s\nwant   %s", got, want)
	}
	if len(res.Rounds) != 3 || len(res.Compared) != 2 || res.Compared[0].Mode != "a" {
		t.Fatalf("result %+v", res)
	}
	for _, row := range res.Rounds {
		for i, m := range row {
			if m.Throughput <= 0 || m.P99 <= 0 || m.CPU <= 0 {
				t.Errorf("mode %s measured %+v", res.Modes[i], m)
			}
		}
	}
	if c := res.Compared[0]; c.CPU == nil || !(c.Throughput.Low <= c.Throughput.Ratio && c.Throughput.Ratio <= c.Throughput.High) {
		t.Errorf("comparison %+v", c)
	}
}

func TestJudgeAndTable(t *testing.T) {
	r := &Result{Modes: []string{"nothing", "collect"}}
	for _, f := range []float64{0.97, 0.98, 0.96, 0.97} {
		r.Rounds = append(r.Rounds, []Measurement{{1000, 2, 50}, {1000 * f, 2 / f, 50 / f}})
	}
	r.judge()
	c := r.Compared[0]
	if math.Abs(c.Throughput.Ratio-0.97) > 0.005 || c.Throughput.High >= 1 || c.CPU == nil || c.CPU.Ratio <= 1 {
		t.Fatalf("comparison %+v", c)
	}
	table := r.Table("svc")
	for _, want := range []string{"svc: baseline 1000 req/s, p99 2.00 ms, 50.0 µs CPU per request; 4 rounds", "| collect | -3.0% [", "| +3.1% ["} {
		if !strings.Contains(table, want) {
			t.Errorf("table lacks %q:\n%s", want, table)
		}
	}
	if _, err := Run(t.Context(), Options{Modes: []Mode{{Name: "only"}}, Rounds: 3}); err == nil {
		t.Error("one mode: no error")
	}
}
