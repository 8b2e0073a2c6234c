package agent

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"testing"
	"time"
)

// The overhead figures in docs/agent.md come from these benchmarks:
//
//	go test -run '^$' -bench . -benchtime 2s ./agent
//
// cpu-ns/op is the process's user+system CPU time per operation, from
// getrusage, so it counts the agent's background goroutines too.

// BenchmarkWatchTick is the cost of one watch interval: read the sample and
// judge it against the thresholds and baselines.
func BenchmarkWatchTick(b *testing.B) {
	s := newSampler()
	w := newWatcher(DefaultTriggers(1 << 30))
	w.observe(s.sample())
	b.ReportAllocs()
	for b.Loop() {
		w.observe(s.sample())
	}
}

// BenchmarkTunerEvaluate is one GOGC tuner evaluation (no change applied).
func BenchmarkTunerEvaluate(b *testing.B) {
	f := newFake()
	f.live = 100 << 20
	o := Options{GOGCTuner: true}
	o.setDefaults()
	tu, _ := newGOGCTuner(f.ctl(), &Limits{MemoryBytes: 1 << 30}, &o)
	rt := realRuntime()
	tu.rt.heapLive = rt.heapLive
	b.ReportAllocs()
	for b.Loop() {
		tu.evaluate(time.Now())
	}
}

// BenchmarkMetricsScrape is one request's worth of work at bundle.MetricsPath.
func BenchmarkMetricsScrape(b *testing.B) {
	a, _ := startFakeB(b, Options{})
	b.ReportAllocs()
	for b.Loop() {
		st := a.Status()
		json.Marshal(MetricsResponse{RuntimeMetrics: *Snapshot(), Agent: &st})
	}
}

func startFakeB(b *testing.B, o Options) (*Agent, *fakeRuntime) {
	f := newFake()
	fx := fixture("v2")
	o.CgroupFS, o.ProcCgroup = fx.mount, fx.procCgroup
	a, err := start(context.Background(), o, f.ctl())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { a.Close() })
	return a, f
}

// service is a small JSON API, the kind of handler the casebook serves.
func service(b *testing.B) string {
	mux := http.NewServeMux()
	mux.HandleFunc("/item", func(w http.ResponseWriter, r *http.Request) {
		type item struct {
			ID    int      `json:"id"`
			Name  string   `json:"name"`
			Tags  []string `json:"tags"`
			Price float64  `json:"price"`
		}
		items := make([]item, 20)
		for i := range items {
			items[i] = item{ID: i, Name: "item", Tags: []string{"a", "b"}, Price: float64(i) * 1.5}
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(items)
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	srv := &http.Server{Handler: mux}
	go srv.Serve(ln)
	b.Cleanup(func() { srv.Close() })
	return "http://" + ln.Addr().String() + "/item"
}

// armed is the agent as a service would run it with everything on, except
// that the watch interval is 50 times shorter than the default to make its
// cost visible, and triggers that cannot fire (a capture is not steady state).
func armed(b *testing.B) Options {
	never := Threshold{Above: 1e18, Factor: 1e9, Min: 1e18}
	return Options{
		CaptureDir:    b.TempDir(),
		WatchInterval: 100 * time.Millisecond,
		TuneInterval:  100 * time.Millisecond,
		GOGCTuner:     true,
		MemoryLimit:   true,
		Triggers:      &Triggers{CPU: never, Goroutines: never, RSS: never, GCShare: never, Baseline: 12, Cooldown: time.Hour},
	}
}

func cpuNow() time.Duration {
	u, s, _ := processCPU()
	return time.Duration((u + s) * float64(time.Second))
}

// BenchmarkServiceLoad drives the service with 4 concurrent keep-alive
// clients: without the agent, with it armed, and armed with the flight
// recorder.
func BenchmarkServiceLoad(b *testing.B) {
	for _, name := range []string{"without-agent", "with-agent-no-flight-recorder", "with-agent"} {
		b.Run(name, func(b *testing.B) {
			url := service(b)
			switch name {
			case "with-agent":
				o := armed(b)
				o.FlightRecorder = true
				startFakeB(b, o)
			case "with-agent-no-flight-recorder":
				startFakeB(b, armed(b))
			}
			client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 8}}
			b.SetParallelism(2) // 2 × GOMAXPROCS clients
			c0 := cpuNow()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					resp, err := client.Get(url)
					if err != nil {
						b.Error(err)
						return
					}
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
			})
			b.StopTimer()
			b.ReportMetric(float64(cpuNow()-c0)/float64(b.N), "cpu-ns/op")
		})
	}
}

// BenchmarkIdle measures the process's CPU while nothing else runs, per
// 100 ms of wall time: without the agent, with it armed at 100 ms intervals,
// and with it armed at the default intervals (5 s; run with -benchtime 100x
// or more so that ticks happen).
func BenchmarkIdle(b *testing.B) {
	for _, mode := range []string{"without-agent", "with-agent-100ms", "with-agent-default"} {
		b.Run(mode, func(b *testing.B) {
			switch mode {
			case "with-agent-100ms":
				startFakeB(b, armed(b))
			case "with-agent-default":
				o := armed(b)
				o.WatchInterval, o.TuneInterval = 0, 0
				startFakeB(b, o)
			}
			c0, t0 := cpuNow(), time.Now()
			for b.Loop() {
				time.Sleep(100 * time.Millisecond)
			}
			wall := time.Since(t0)
			b.ReportMetric(100*float64(cpuNow()-c0)/float64(wall), "cpu-%")
		})
	}
}

// BenchmarkCapture is the CPU one capture costs beyond its CPU profile's
// window (which is set to 100 ms here): the flight recorder's snapshot,
// MemStats twice, seven profiles, the JSON files and the rotation.
func BenchmarkCapture(b *testing.B) {
	o := armed(b)
	o.CaptureCPU = 100 * time.Millisecond
	a, _ := startFakeB(b, o)
	c0 := cpuNow()
	for b.Loop() {
		if _, err := a.Capture(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(cpuNow()-c0)/float64(b.N), "cpu-ns/op")
}

// BenchmarkFlightRecorder is the flight recorder's cost on the work it
// records most densely: goroutine hand-offs (each is a trace event). One
// op is a request handed to a worker goroutine and answered over
// channels, plus a little hashing; "on" runs the agent's recorder.
func BenchmarkFlightRecorder(b *testing.B) {
	for _, on := range []bool{false, true} {
		name := "off"
		if on {
			name = "on"
		}
		b.Run(name, func(b *testing.B) {
			if on {
				fr, err := startFlight(10*time.Second, 32<<20)
				if err != nil {
					b.Skip(err)
				}
				defer fr.stop()
			}
			reqs, resps := make(chan uint64), make(chan uint64)
			go func() {
				for x := range reqs {
					for range 200 {
						x ^= x << 13
						x ^= x >> 7
						x ^= x << 17
					}
					resps <- x
				}
			}()
			defer close(reqs)
			c0 := cpuNow()
			var x uint64 = 1
			for b.Loop() {
				reqs <- x
				x = <-resps
			}
			b.ReportMetric(float64(cpuNow()-c0)/float64(b.N), "cpu-ns/op")
		})
	}
}
