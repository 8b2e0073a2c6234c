package fleet

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/pprof"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/perfdoctor/perfdoctor/bundle"
	"github.com/perfdoctor/perfdoctor/collect"
	"github.com/perfdoctor/perfdoctor/collect/system"
)

// The scale simulation: N in-process fake targets, each its own loopback
// listener serving pprof answers recorded once from this process (real
// profiles, a real trace), behind a fake targets API that lists them all
// with a CPU figure each. docs/fleet.md has the figures.

// canned holds real pprof answers, by path and debug parameter.
var canned struct {
	once sync.Once
	err  error
	body map[string][]byte
}

func recordCanned() error {
	canned.once.Do(func() {
		mux := http.NewServeMux()
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
		srv := httptest.NewServer(mux)
		defer srv.Close()
		stop := make(chan struct{})
		go spin(stop) // something for the CPU profile to see
		defer close(stop)
		canned.body = map[string][]byte{}
		var mu sync.Mutex
		var wg sync.WaitGroup
		for _, path := range []string{"/debug/pprof/", "/debug/pprof/profile?seconds=1", "/debug/pprof/trace?seconds=0.2",
			"/debug/pprof/heap", "/debug/pprof/heap?debug=1", "/debug/pprof/allocs", "/debug/pprof/goroutine",
			"/debug/pprof/mutex?seconds=1", "/debug/pprof/block?seconds=1"} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				resp, err := http.Get(srv.URL + path)
				if err != nil {
					canned.err = err
					return
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				mu.Lock()
				canned.body[cannedKey(path)] = b
				mu.Unlock()
			}()
		}
		wg.Wait()
	})
	return canned.err
}

func cannedKey(pathQuery string) string {
	req := httptest.NewRequest("GET", pathQuery, nil)
	return key(req)
}

func key(r *http.Request) string {
	k := r.URL.Path
	if r.URL.Query().Get("debug") == "1" {
		k += "?debug=1"
	}
	return k
}

func spin(stop chan struct{}) {
	x := 0
	for {
		select {
		case <-stop:
			return
		default:
		}
		for i := 0; i < 1e5; i++ {
			x += i * i
		}
		_ = strconv.Itoa(x)
	}
}

// fakeFleet is the simulation's targets: each serves the canned answers,
// holding a windowed request (profile, trace, mutex, block) for its window
// when hold is set, and counts the CPU profiles in flight across all.
type fakeFleet struct {
	servers         []*httptest.Server
	api             *httptest.Server
	inFlight, maxIn atomic.Int64
	profiles        atomic.Int64
	hold            atomic.Bool
	stall           sync.Map    // host:port -> never answer the CPU profile
	noCPU           atomic.Bool // Prometheus has no process_cpu_seconds_total
}

func newFakeFleet(t testing.TB, targets, perService int, hold bool) *fakeFleet {
	t.Helper()
	if err := recordCanned(); err != nil {
		t.Fatal(err)
	}
	f := &fakeFleet{}
	f.hold.Store(hold)
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, ok := canned.body[key(r)]
		if !ok {
			http.NotFound(w, r)
			return
		}
		if r.URL.Path == "/debug/pprof/profile" {
			if _, ok := f.stall.Load(r.Host); ok {
				<-r.Context().Done()
				return
			}
			n := f.inFlight.Add(1)
			defer f.inFlight.Add(-1)
			for m := f.maxIn.Load(); n > m && !f.maxIn.CompareAndSwap(m, n); m = f.maxIn.Load() {
			}
			f.profiles.Add(1)
		}
		if s, err := strconv.ParseFloat(r.URL.Query().Get("seconds"), 64); err == nil && f.hold.Load() {
			select {
			case <-time.After(time.Duration(s * float64(time.Second))):
			case <-r.Context().Done():
				return
			}
		}
		w.Write(b)
	})
	type target struct {
		DiscoveredLabels map[string]string `json:"discoveredLabels"`
		Labels           map[string]string `json:"labels"`
		ScrapeURL        string            `json:"scrapeUrl"`
		Health           string            `json:"health"`
	}
	var active []target
	var cpu []map[string]any
	for i := 0; i < targets; i++ {
		s := httptest.NewServer(handler)
		f.servers = append(f.servers, s)
		addr := s.Listener.Addr().String()
		job := fmt.Sprintf("svc-%03d", i/perService)
		active = append(active, target{Labels: map[string]string{"job": job, "instance": addr}, ScrapeURL: "http://" + addr + "/metrics", Health: "up"})
		cpu = append(cpu, map[string]any{"metric": map[string]string{"job": job, "instance": addr},
			"value": []any{float64(time.Now().Unix()), strconv.FormatFloat(0.1+float64(i%7)*0.05, 'f', -1, 64)}})
	}
	targetsDoc, _ := json.Marshal(map[string]any{"status": "success", "data": map[string]any{"activeTargets": active, "droppedTargets": []any{}}})
	queryDoc, _ := json.Marshal(map[string]any{"status": "success", "data": map[string]any{"resultType": "vector", "result": cpu}})
	f.api = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/api/v1/targets":
			w.Write(targetsDoc)
		case "/api/v1/query":
			if f.noCPU.Load() {
				w.Write([]byte(`{"status":"success","data":{"resultType":"vector","result":[]}}`))
				return
			}
			w.Write(queryDoc)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(f.close)
	return f
}

// remote collects as from a remote target: with /proc and /sys roots that
// hold nothing, collect finds no local process to snapshot. Every fake
// target is a socket of this one process, which it would otherwise look
// up among all of them for each collection.
func remote(t testing.TB) func(context.Context, collect.Options) (*bundle.Manifest, error) {
	empty := t.TempDir()
	return func(ctx context.Context, o collect.Options) (*bundle.Manifest, error) {
		o.Roots = system.Roots{Proc: empty, Sys: empty}
		return collect.Collect(ctx, o)
	}
}

func (f *fakeFleet) close() {
	f.api.Close()
	for _, s := range f.servers {
		s.Close()
	}
}

// TestScaleBounded runs 1,000 targets (100 services of 10): every service
// gets its hottest and one sampled instance diagnosed, no more than the
// concurrency limit is ever collected at once,
// and with a budget too small for all, the rest is recorded as skipped.
func TestScaleBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("1,000 fake targets")
	}
	f := newFakeFleet(t, 1000, 10, false)
	ctx := context.Background()
	rep, err := Run(ctx, Options{
		Discovery: Discovery{Prometheus: f.api.URL},
		Plan:      Plan{Hottest: 1, Sample: 1, Concurrency: 40, Duration: time.Second, OutDir: t.TempDir(), Seed: 1, Collect: remote(t)},
		Tool:      "perfdoctor test",
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Services) != 100 || rep.Collected() != 200 || f.profiles.Load() != 200 {
		t.Fatalf("%d services, %d collected, %d CPU profiles; want 100, 200, 200", len(rep.Services), rep.Collected(), f.profiles.Load())
	}
	if m := f.maxIn.Load(); m > 40 {
		t.Errorf("%d collections at once, over the limit of 40", m)
	}
	for _, s := range rep.Services {
		if s.CPUSource != CPUFromPrometheus || s.ReportHTML == "" || s.Instances[0].Picked != PickedHottest || s.Collected != 2 {
			t.Fatalf("service %s: %+v", s.Name, s)
		}
	}

	// A budget that ends while the first windows are held: what started is
	// cut, what did not is skipped, and the report is still written.
	f.hold.Store(true)
	rep, err = Run(ctx, Options{
		Discovery: Discovery{Prometheus: f.api.URL},
		Plan:      Plan{Hottest: 1, Concurrency: 4, Duration: 2 * time.Second, Budget: 500 * time.Millisecond, OutDir: t.TempDir()},
	})
	if err != nil {
		t.Fatal(err)
	}
	skipped := 0
	for _, s := range rep.Services {
		for _, in := range s.Instances {
			if in.Status == StatusSkipped && in.Picked != "" {
				skipped++
			}
		}
	}
	if !rep.Partial || skipped < 90 {
		t.Errorf("budget cut: partial %v, %d of 100 picked instances skipped", rep.Partial, skipped)
	}
}

// BenchmarkFleet measures discovery, bounded collection and diagnosis of
// fleets of growing size (10 instances a service, 3 hottest + 2 sampled,
// concurrency 32, each target holding its 1 s window), reporting the peak
// heap: go test -run XXX -bench Fleet -benchtime 1x ./fleet/
func BenchmarkFleet(b *testing.B) {
	for _, n := range []int{250, 500, 1000, 2000} {
		b.Run(fmt.Sprintf("targets=%d", n), func(b *testing.B) {
			f := newFakeFleet(b, n, 10, true)
			collectFn := remote(b)
			for b.Loop() {
				dir := b.TempDir()
				peak := watchHeap()
				start := time.Now()
				fl, err := Discover(context.Background(), Discovery{Prometheus: f.api.URL})
				if err != nil {
					b.Fatal(err)
				}
				discover := time.Since(start)
				rep, err := Diagnose(context.Background(), fl, Options{Plan: Plan{Hottest: 3, Sample: 2, Concurrency: 32, Duration: time.Second, OutDir: dir, Seed: 1, Collect: collectFn}})
				if err != nil {
					b.Fatal(err)
				}
				var buf bytes.Buffer
				json.NewEncoder(&buf).Encode(rep)
				b.ReportMetric(float64(discover.Microseconds())/1e3, "discover-ms")
				b.ReportMetric(float64(rep.Collected()), "collected")
				b.ReportMetric(float64(peak()>>20), "peak-heap-MiB")
				b.ReportMetric(float64(buf.Len())/1024, "report-KiB")
				os.RemoveAll(dir)
			}
		})
	}
}

// watchHeap samples the heap in use every 10 ms until the returned
// function is called, which returns the peak.
func watchHeap() func() uint64 {
	var peak atomic.Uint64
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			if ms.HeapInuse > peak.Load() {
				peak.Store(ms.HeapInuse)
			}
			select {
			case <-stop:
				return
			case <-time.After(10 * time.Millisecond):
			}
		}
	}()
	return func() uint64 { close(stop); <-done; return peak.Load() }
}

// TestFailuresRecorded: an instance that stops answering and one slower
// than the per-target timeout are recorded with why, and the rest of the
// service is still diagnosed.
func TestFailuresRecorded(t *testing.T) {
	f := newFakeFleet(t, 4, 4, false)
	f.servers[1].Close() // unreachable
	slow := f.servers[2]
	f.stall.Store(slow.Listener.Addr().String(), true)
	rep, err := Run(context.Background(), Options{
		Discovery: Discovery{Prometheus: f.api.URL},
		Plan:      Plan{Hottest: 4, Duration: time.Second, TargetTimeout: 3 * time.Second, OutDir: t.TempDir(), Collect: remote(t)},
	})
	if err != nil {
		t.Fatal(err)
	}
	s := rep.Services[0]
	if !rep.Partial || s.Collected != 2 || s.ReportJSON == "" {
		t.Fatalf("partial %v, %d collected, report %q; want true, 2, a report", rep.Partial, s.Collected, s.ReportJSON)
	}
	byName := map[string]InstanceReport{}
	for _, in := range s.Instances {
		byName[in.Instance] = in
	}
	down := byName[f.servers[1].Listener.Addr().String()]
	if down.Status != StatusFailed || !strings.Contains(down.Error, "unreachable") {
		t.Errorf("closed instance: %s %q", down.Status, down.Error)
	}
	cut := byName[slow.Listener.Addr().String()]
	if cut.Status != StatusFailed || !strings.Contains(cut.Error, "per-target timeout") {
		t.Errorf("slow instance: %s %q", cut.Status, cut.Error)
	}
}

// TestCPUFromProfiles: without process_cpu_seconds_total in Prometheus, the
// collected instances' cores come from their CPU profiles, and the others
// weigh as their mean.
func TestCPUFromProfiles(t *testing.T) {
	f := newFakeFleet(t, 4, 4, false)
	f.noCPU.Store(true)
	rep, err := Run(context.Background(), Options{
		Discovery: Discovery{Prometheus: f.api.URL},
		Plan:      Plan{Hottest: 2, Duration: time.Second, OutDir: t.TempDir(), Collect: remote(t)},
	})
	if err != nil {
		t.Fatal(err)
	}
	s := rep.Services[0]
	var measured []float64
	for _, in := range s.Instances {
		if in.Picked != "" {
			if in.Cores == nil || in.CPUSource != CPUFromProfile || *in.Cores <= 0 {
				t.Fatalf("collected instance %s: cores %v from %q", in.Instance, in.Cores, in.CPUSource)
			}
			measured = append(measured, *in.Cores)
		} else if in.Cores != nil {
			t.Errorf("uncollected instance %s has cores %v", in.Instance, *in.Cores)
		}
	}
	if want := 2 * (measured[0] + measured[1]); s.CPUSource != CPUFromProfile || s.Cores < want*0.999 || s.Cores > want*1.001 {
		t.Errorf("service: %v cores from %s, want %v (4 instances at the mean of 2)", s.Cores, s.CPUSource, want)
	}
}
