package net006

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"

	"github.com/perfdoctor/perfdoctor/facts"

	"runtime"
	"runtime/pprof"
	rtrace "runtime/trace"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/pprof/profile"

	"github.com/perfdoctor/perfdoctor/evidence"
	"github.com/perfdoctor/perfdoctor/evidence/trace"
	"github.com/perfdoctor/perfdoctor/internal/testprof"
	"github.com/perfdoctor/perfdoctor/rules"
)

var backendURL string

func fetch(part string) {
	resp, err := http.Get(backendURL + part)
	if err == nil {
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
}

// sequential calls the backend three times, one call after the other.
func sequential(w http.ResponseWriter, r *http.Request) {
	for _, p := range []string{"a", "b", "c"} {
		fetch(p)
	}
}

// parallel makes the same calls at once and waits for all of them.
func parallel(w http.ResponseWriter, r *http.Request) {
	var wg sync.WaitGroup
	for _, p := range []string{"a", "b", "c"} {
		wg.Add(1)
		go func() { defer wg.Done(); fetch(p) }()
	}
	wg.Wait()
}

// diagnose serves handler on loopback in front of a backend answering in
// 2 ms, sends it 40 requests on two kept-alive connections under an
// execution trace, and runs the rule on the trace.
func diagnose(t *testing.T, handler http.HandlerFunc) rules.Result {
	t.Helper()
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(2 * time.Millisecond)
	}))
	defer backend.Close()
	backendURL = backend.URL + "/"
	svc := httptest.NewServer(handler)
	defer svc.Close()
	var buf bytes.Buffer
	if err := rtrace.Start(&buf); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 20 {
				fetchURL(svc.URL)
			}
		}()
	}
	wg.Wait()
	rtrace.Stop()
	sum, err := trace.Summarize(&buf)
	if err != nil {
		t.Fatal(err)
	}
	ev := testprof.Evidence(map[evidence.Kind]*profile.Profile{})
	ev.TraceSummary = sum
	return rules.Run(facts.New(ev), []*rules.Rule{Rule})
}

func fetchURL(url string) {
	resp, err := http.Get(url)
	if err == nil {
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
}

func TestSequentialCallsToADownstream(t *testing.T) {
	res := diagnose(t, sequential)
	if len(res.Findings) != 1 {
		t.Fatalf("want one finding: %+v", res)
	}
	f := res.Findings[0]
	if f.Severity != rules.High || f.Resource != "latency" || !strings.Contains(f.Summary, "net006.sequential spends") ||
		!strings.Contains(f.Summary, "called from net006.fetch") {
		t.Errorf("%s %s %q", f.Severity, f.Resource, f.Summary)
	}
	if len(f.Locations) == 0 || !strings.HasSuffix(f.Locations[0].File, "downstream_test.go") {
		t.Errorf("the call is not located: %+v", f.Locations)
	}
}

func TestParallelCallsAreNotReported(t *testing.T) {
	if res := diagnose(t, parallel); len(res.Findings) != 0 {
		t.Errorf("parallel calls reported: %q", res.Findings[0].Summary)
	}
}

// single makes one call per request; proxy forwards each request with the
// standard library's reverse proxy.
func single(w http.ResponseWriter, r *http.Request) { fetch("a") }

func reverseProxy(w http.ResponseWriter, r *http.Request) {
	u, _ := url.Parse(backendURL) // set by diagnose before the first request
	httputil.NewSingleHostReverseProxy(u).ServeHTTP(w, r)
}

// A request that makes one downstream call has nothing to reorder: the
// rule says so at info level, with no gain and no parallel-calls example,
// and points at the downstream. A reverse proxy likewise.
func TestOneCallPerRequestIsTheDownstreamsLatency(t *testing.T) {
	for _, tc := range []struct {
		name    string
		handler http.HandlerFunc
		says    string
	}{
		{"one call", single, "each request makes one downstream call"},
		{"reverse proxy", reverseProxy, "a proxy forwards each request"},
	} {
		res := diagnose(t, tc.handler)
		if len(res.Findings) != 1 {
			t.Fatalf("%s: want one finding: %+v", tc.name, res)
		}
		f := res.Findings[0]
		if f.Severity != rules.Info || f.Impact != 0 || f.Example != "" || !strings.Contains(f.Summary, tc.says) ||
			!strings.Contains(f.Fix, "Diagnose the downstream") {
			t.Errorf("%s: %s impact %.2f %q example %q", tc.name, f.Severity, f.Impact, f.Summary, f.Example)
		}
	}
}

// diagnoseFromBlock serves handler as diagnose does, without a trace: the
// evidence is a block profile over the load (as collect fetches it, a
// delta) and a goroutine profile taken while a request waits on the backend.
func diagnoseFromBlock(t *testing.T, handler http.HandlerFunc) rules.Result {
	t.Helper()
	var snapshot *profile.Profile
	var once sync.Once
	var calls atomic.Int64
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) == 30 {
			once.Do(func() { snapshot = readProfile(t, "goroutine") })
		}
		time.Sleep(2 * time.Millisecond)
	}))
	defer backend.Close()
	backendURL = backend.URL + "/"
	svc := httptest.NewServer(handler)
	defer svc.Close()
	runtime.SetBlockProfileRate(1)
	defer runtime.SetBlockProfileRate(0)
	before := readProfile(t, "block")
	start := time.Now()
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			for range 20 {
				fetchURL(svc.URL)
			}
		})
	}
	wg.Wait()
	after := readProfile(t, "block")
	before.Scale(-1)
	block, err := profile.Merge([]*profile.Profile{after, before})
	if err != nil {
		t.Fatal(err)
	}
	block.DurationNanos = time.Since(start).Nanoseconds()
	ev := testprof.Evidence(map[evidence.Kind]*profile.Profile{evidence.Block: block, evidence.Goroutine: snapshot})
	return rules.Run(facts.New(ev), []*rules.Rule{Rule})
}

func readProfile(t *testing.T, name string) *profile.Profile {
	var buf bytes.Buffer
	if err := pprof.Lookup(name).WriteTo(&buf, 0); err != nil {
		t.Error(err)
		return nil
	}
	p, err := profile.Parse(&buf)
	if err != nil {
		t.Error(err)
	}
	return p
}

func TestSequentialCallsFromTheBlockProfile(t *testing.T) {
	res := diagnoseFromBlock(t, sequential)
	if len(res.Findings) != 1 {
		t.Fatalf("want one finding: %+v", res)
	}
	f := res.Findings[0]
	if f.Severity < rules.Medium || !strings.Contains(f.Summary, "net006.sequential spends about") ||
		!strings.Contains(f.Summary, "(block profile)") || !strings.Contains(f.Summary, "called from net006.fetch") {
		t.Errorf("%s %q", f.Severity, f.Summary)
	}
	var source string
	for _, fa := range f.Evidence {
		if fa.Name == "source" {
			source = fa.Value
		}
	}
	if !strings.HasPrefix(source, "block profile over") {
		t.Errorf("source %q", source)
	}
}

func TestParallelCallsAreNotReportedFromTheBlockProfile(t *testing.T) {
	if res := diagnoseFromBlock(t, parallel); len(res.Findings) != 0 {
		t.Errorf("parallel calls reported: %q", res.Findings[0].Summary)
	}
}
