package facts_test

import (
	"math"
	"testing"
	"time"

	"github.com/perfdoctor/perfdoctor/bundle"
	"github.com/perfdoctor/perfdoctor/evidence"
	"github.com/perfdoctor/perfdoctor/facts"
)

// Little's law over the load's own figures: 80 requests/s at a mean of
// 400 ms are 32 in flight; the fastest, 20 ms, is the service time without
// a wait, so 1.6 were served at once and 95% of the time was a wait.
func TestLoadQueue(t *testing.T) {
	load := &bundle.LoadResult{Mode: "closed", Concurrency: 32, Requests: 2000, Errors: 3, Throughput: 80,
		Service: bundle.LoadPercentiles{Mean: 400}, Table: []bundle.LoadQuantile{{Percentile: 0, MS: 20}, {Percentile: 50, MS: 390}}}
	q := facts.Read(evidence.NewBuilder("test").Load(load).Evidence(), facts.LoadQueue)
	if !q.OK || q.Fastest != 20*time.Millisecond || q.Mean != 400*time.Millisecond ||
		!near(q.InFlight, 32) || !near(q.InService, 1.6) || !near(q.WaitShare, 0.95) {
		t.Errorf("%+v", q)
	}
	for name, l := range map[string]*bundle.LoadResult{
		"no load":               nil,
		"a command load":        {Mode: "command", Requests: 100, Throughput: 10},
		"no percentile table":   {Requests: 100, Throughput: 10, Service: bundle.LoadPercentiles{Mean: 5}},
		"errors over 1%":        {Requests: 100, Errors: 2, Throughput: 10, Service: bundle.LoadPercentiles{Mean: 5}, Table: load.Table},
		"fastest over the mean": {Requests: 100, Throughput: 10, Service: bundle.LoadPercentiles{Mean: 5}, Table: load.Table},
	} {
		b := evidence.NewBuilder("test")
		if l != nil {
			b.Load(l)
		}
		if q := facts.Read(b.Evidence(), facts.LoadQueue); q.OK {
			t.Errorf("%s: %+v", name, q)
		}
	}
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9*math.Max(1, math.Abs(b)) }
