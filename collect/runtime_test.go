package collect

import (
	"encoding/json"
	"expvar"
	"fmt"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"testing"
	"time"

	"github.com/perfdoctor/perfdoctor/bundle"
	"github.com/perfdoctor/perfdoctor/evidence"
)

// readRuntimeMetrics is a real runtime/metrics snapshot in the agent's JSON
// shape (the agent package is not written yet; this is what it will serve).
func readRuntimeMetrics() bundle.RuntimeMetrics {
	descs := metrics.All()
	samples := make([]metrics.Sample, len(descs))
	for i, d := range descs {
		samples[i].Name = d.Name
	}
	metrics.Read(samples)
	rm := bundle.RuntimeMetrics{
		Time: time.Now(), Values: map[string]float64{}, Histograms: map[string]bundle.Histogram{},
		GoVersion: runtime.Version(), GOMAXPROCS: runtime.GOMAXPROCS(0), GOGC: 100, GOMEMLIMIT: math.MaxInt64,
	}
	finite := func(v float64) float64 { return max(min(v, math.MaxFloat64), -math.MaxFloat64) }
	for _, s := range samples {
		switch s.Value.Kind() {
		case metrics.KindUint64:
			rm.Values[s.Name] = float64(s.Value.Uint64())
		case metrics.KindFloat64:
			rm.Values[s.Name] = s.Value.Float64()
		case metrics.KindFloat64Histogram:
			h := s.Value.Float64Histogram()
			b := bundle.Histogram{Counts: append([]uint64(nil), h.Counts...)}
			for _, x := range h.Buckets {
				b.Buckets = append(b.Buckets, finite(x))
			}
			rm.Histograms[s.Name] = b
		}
	}
	return rm
}

func collectLight(t *testing.T, h http.Handler) (string, *bundle.Manifest) {
	t.Helper()
	burnCPU(t)
	srv := serve(t, h)
	out := filepath.Join(t.TempDir(), "b")
	m, err := Collect(t.Context(), Options{Target: srv.URL, Duration: time.Second, TraceDuration: -1, OutDir: out, Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range m.Items {
		if it.Name == "metrics-start" || it.Name == "metrics-end" {
			if it.Status != bundle.StatusOK {
				t.Errorf("%s: %s %s", it.Name, it.Status, it.Error)
			}
		}
	}
	return out, m
}

func TestCollectRuntimeMetrics(t *testing.T) {
	mux := pprofMux()
	mux.HandleFunc(bundle.MetricsPath, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(readRuntimeMetrics())
	})
	stop := make(chan struct{})
	go func() { // some GC and scheduling in the window
		for {
			select {
			case <-stop:
				return
			case <-time.After(50 * time.Millisecond):
				runtime.GC()
			}
		}
	}()
	defer close(stop)
	out, _ := collectLight(t, mux)
	ev, err := evidence.Load(t.Context(), evidence.LoadOptions{}, out)
	if err != nil {
		t.Fatal(err)
	}
	start, end, ok := ev.RuntimeMetrics()
	if !ok || len(start.Values) == 0 || !end.Time.After(start.Time) {
		t.Fatalf("no runtime/metrics at both ends: %v", ok)
	}
	w, ok := ev.Runtime()
	if !ok {
		t.Fatal("Runtime() not ok")
	}
	if w.GCCycles < 5 || !w.Has(evidence.MetricGCCPU) || w.GCShare <= 0 || w.GCShare > 1 {
		t.Errorf("GC figures: cycles %v share %v", w.GCCycles, w.GCShare)
	}
	if w.HeapLive == 0 || w.GoroutinesEnd < 2 || w.SchedLatencyCount == 0 || w.SchedLatencyP99 <= 0 {
		t.Errorf("window: %+v", w)
	}
	if s := ev.Settings(); s.GOGC != 100 || s.GOMAXPROCS != runtime.GOMAXPROCS(0) {
		t.Errorf("settings from runtime/metrics: %+v", s)
	}
	if _, ok := ev.GC(); !ok {
		t.Error("MemStats-shaped window missing")
	}
	t.Logf("GC %.0f cycles, %.1f%% of CPU used, sched p99 %v over %d, live %d KiB, %v goroutines",
		w.GCCycles, w.GCShare*100, w.SchedLatencyP99, w.SchedLatencyCount, w.HeapLive>>10, w.GoroutinesEnd)
}

func TestCollectExpvar(t *testing.T) {
	mux := http.NewServeMux()
	pp := pprofMux()
	// a service whose heap?debug=1 trailer is unavailable (a proxy strips
	// it) but which publishes expvar
	mux.HandleFunc("/debug/pprof/", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("debug") == "1" {
			http.NotFound(w, r)
			return
		}
		pp.ServeHTTP(w, r)
	})
	mux.Handle(ExpvarPath, expvar.Handler())
	out, _ := collectLight(t, mux)
	for _, f := range []string{bundle.MetricsStartFile, bundle.MetricsEndFile} {
		var st bundle.RuntimeStats
		data, err := os.ReadFile(filepath.Join(out, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(data, &st); err != nil {
			t.Fatal(err)
		}
		if st.Source != "expvar memstats" || st.NumGC == 0 || st.HeapAlloc == 0 || st.Runtime != nil {
			t.Errorf("%s: %+v", f, st)
		}
	}
}

func TestCollectHeapSeries(t *testing.T) {
	var grow [][]byte
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { // a heap that grows through the window
		defer close(done)
		for {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
				grow = append(grow, make([]byte, 256<<10))
			}
		}
	}()
	defer func() { close(stop); <-done; grow = nil }()
	burnCPU(t)
	srv := serve(t, pprofMux())
	out := filepath.Join(t.TempDir(), "b")
	m, err := Collect(t.Context(), Options{Target: srv.URL, Duration: 2 * time.Second, TraceDuration: -1, HeapEvery: 500 * time.Millisecond, OutDir: out, Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 3; i++ {
		if !m.OK(fmt.Sprintf("heap-%d", i)) {
			t.Errorf("heap-%d not collected: %+v", i, m.Items)
		}
		if _, err := os.Stat(filepath.Join(out, HeapSeriesFile(i))); err != nil {
			t.Error(err)
		}
	}
	ev, err := evidence.Load(t.Context(), evidence.LoadOptions{}, out)
	if err != nil {
		t.Fatal(err)
	}
	hs := ev.Heaps()
	if len(hs) != 5 || hs[0] != ev.Profile(evidence.HeapStart) || hs[4] != ev.Profile(evidence.Heap) {
		t.Fatalf("series of %d heaps", len(hs))
	}
	for i := 1; i < len(hs); i++ {
		if hs[i].TimeNanos <= hs[i-1].TimeNanos {
			t.Errorf("series out of order at %d", i)
		}
	}
	if _, err := Collect(t.Context(), Options{Target: srv.URL, Duration: time.Second, HeapEvery: time.Millisecond, OutDir: filepath.Join(t.TempDir(), "x")}); err == nil {
		t.Error("a 1 ms heap interval was accepted")
	}
}
