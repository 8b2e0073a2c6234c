package agent

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"math"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/google/pprof/profile"
	"github.com/perfdoctor/perfdoctor/bundle"
)

// startFake starts an agent on the v2 fixture with a fake runtime, so the
// test binary's own settings are never changed.
func startFake(t *testing.T, o Options) (*Agent, *fakeRuntime) {
	t.Helper()
	f := newFake()
	if o.CgroupFS == "" {
		fx := fixture("v2")
		o.CgroupFS, o.ProcCgroup = fx.mount, fx.procCgroup
	}
	a, err := start(context.Background(), o, f.ctl())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	return a, f
}

func get(t *testing.T, a *Agent, path, token string) (int, []byte) {
	t.Helper()
	req, _ := http.NewRequest("GET", "http://"+a.Addr()+path, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

func TestLoopbackOnly(t *testing.T) {
	for _, addr := range []string{":0", "0.0.0.0:0", "[::]:0", "192.0.2.10:0", "example.com:0"} {
		if _, err := start(context.Background(), Options{Addr: addr}, newFake().ctl()); !errors.Is(err, ErrNotLoopback) {
			t.Errorf("%s: err = %v, want ErrNotLoopback", addr, err)
		}
	}
	for _, addr := range []string{"", "127.0.0.1:0", "localhost:0"} {
		a, _ := startFake(t, Options{Addr: addr})
		if !strings.HasPrefix(a.Addr(), "127.0.0.1:") && !strings.HasPrefix(a.Addr(), "[::1]:") {
			t.Errorf("%q listens on %s", addr, a.Addr())
		}
	}
	// AllowRemote lifts the check (bound to loopback here all the same).
	a, err := start(context.Background(), Options{Addr: "127.0.0.2:0", AllowRemote: true}, newFake().ctl())
	if err != nil {
		t.Skipf("127.0.0.2 not bindable here: %v", err)
	}
	a.Close()
}

func TestAuth(t *testing.T) {
	a, _ := startFake(t, Options{Token: "s3cret"})
	for _, path := range []string{"/debug/pprof/", bundle.MetricsPath, StatusPath, "/debug/pprof/heap"} {
		if code, _ := get(t, a, path, ""); code != http.StatusUnauthorized {
			t.Errorf("%s without token: %d", path, code)
		}
		if code, _ := get(t, a, path, "s3cre"); code != http.StatusUnauthorized {
			t.Errorf("%s wrong token: %d", path, code)
		}
		if code, _ := get(t, a, path, "s3cret"); code != http.StatusOK {
			t.Errorf("%s right token: %d", path, code)
		}
	}
	// A token in another scheme is no token.
	req, _ := http.NewRequest("GET", "http://"+a.Addr()+StatusPath, nil)
	req.SetBasicAuth("x", "s3cret")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized || resp.Header.Get("WWW-Authenticate") == "" {
		t.Errorf("basic auth: %d %q", resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
	}
}

func TestMetricsEndpoint(t *testing.T) {
	a, _ := startFake(t, Options{MemoryLimit: true, GOGCTuner: true})
	code, body := get(t, a, bundle.MetricsPath, "")
	if code != http.StatusOK {
		t.Fatalf("%d %s", code, body)
	}
	var m bundle.RuntimeMetrics // what collect decodes
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatal(err)
	}
	if m.GoVersion == "" || m.GOMAXPROCS < 1 || m.GOGC == 0 || m.GOMEMLIMIT == 0 {
		t.Errorf("settings: %+v", m)
	}
	for _, name := range []string{"/gc/cycles/total:gc-cycles", mHeapLive, mGCCPU, mGoroutines} {
		if _, ok := m.Values[name]; !ok {
			t.Errorf("no %s", name)
		}
	}
	h, ok := m.Histograms["/sched/latencies:seconds"]
	if !ok || len(h.Buckets) != len(h.Counts)+1 {
		t.Fatalf("histogram: %v", ok)
	}
	if h.Buckets[len(h.Buckets)-1] != math.MaxFloat64 {
		t.Errorf("+Inf boundary = %v", h.Buckets[len(h.Buckets)-1])
	}
	var full MetricsResponse
	if err := json.Unmarshal(body, &full); err != nil {
		t.Fatal(err)
	}
	st := full.Agent
	if st == nil || st.Cgroup == nil || st.Cgroup.MemoryBytes != 1<<30 || st.MemoryLimit == nil || !st.MemoryLimit.Applied ||
		st.GOGC == nil || !st.GOGC.Active || st.GOMAXPROCS.Recommended != 2 {
		t.Fatalf("agent status: %s", body[strings.Index(string(body), `"agent"`):])
	}
	if code, body := get(t, a, StatusPath, ""); code != http.StatusOK || !strings.Contains(string(body), `"memory_limit"`) {
		t.Errorf("status: %d %s", code, body)
	}
}

func TestPprofEndpoints(t *testing.T) {
	a, _ := startFake(t, Options{})
	code, body := get(t, a, "/debug/pprof/", "")
	// collect's probe: the index links goroutine?debug= and heap.
	if code != http.StatusOK || !strings.Contains(string(body), "goroutine?debug=") || !strings.Contains(string(body), "heap") {
		t.Fatalf("index %d: %s", code, body)
	}
	for _, path := range []string{"/debug/pprof/heap", "/debug/pprof/goroutine", "/debug/pprof/mutex?seconds=1", "/debug/pprof/profile?seconds=0.2"} {
		code, body := get(t, a, path, "")
		if code != http.StatusOK {
			t.Fatalf("%s: %d %s", path, code, body)
		}
		if _, err := profile.ParseData(body); err != nil {
			t.Errorf("%s: %v", path, err)
		}
	}
	if code, body := get(t, a, "/debug/pprof/heap?debug=1", ""); code != http.StatusOK || !strings.Contains(string(body), "# runtime.MemStats") {
		t.Errorf("heap?debug=1: %d", code)
	}
	if code, _ := get(t, a, "/debug/pprof/nope", ""); code != http.StatusNotFound {
		t.Errorf("unknown profile: %d", code)
	}
	if code, _ := get(t, a, "/debug/pprof/profile?seconds=9999", ""); code != http.StatusBadRequest {
		t.Errorf("huge seconds: %d", code)
	}
	// The application's default mux is untouched.
	if _, pattern := http.DefaultServeMux.Handler(&http.Request{Method: "GET", URL: mustURL("/debug/pprof/")}); pattern != "" {
		t.Errorf("DefaultServeMux serves %q", pattern)
	}
}

func TestCloseRestores(t *testing.T) {
	f := newFake()
	fx := fixture("v1")
	a, err := start(context.Background(), Options{CgroupFS: fx.mount, ProcCgroup: fx.procCgroup, MemoryLimit: true, GOGCTuner: true, SetGOMAXPROCS: true}, f.ctl())
	if err != nil {
		t.Fatal(err)
	}
	if f.procs != 2 || f.memLimit == math.MaxInt64 || f.gogc == 100 {
		t.Fatalf("not applied: procs %d memlimit %d gogc %d", f.procs, f.memLimit, f.gogc)
	}
	a.Close()
	if f.procs != 8 || f.memLimit != math.MaxInt64 || f.gogc != 100 {
		t.Fatalf("not restored: procs %d memlimit %d gogc %d", f.procs, f.memLimit, f.gogc)
	}
	if err := a.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

func TestContextEndsAgent(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	a, err := start(ctx, Options{}, newFake().ctl())
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	a.wg.Wait()
	if _, err := http.Get("http://" + a.Addr() + StatusPath); err == nil {
		t.Error("still serving after ctx was cancelled")
	}
}

func mustURL(p string) *url.URL {
	u, err := url.Parse(p)
	if err != nil {
		panic(err)
	}
	return u
}
