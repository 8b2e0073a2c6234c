package collect

import (
	"net/http"
	"net/http/pprof"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/pprof/profile"

	"github.com/perfdoctor/perfdoctor/bundle"
	"github.com/perfdoctor/perfdoctor/internal/testprof"
)

// busyServer serves net/http/pprof but answers the first n requests to
// each endpoint in busy with its status and Retry-After header, as a
// server's own concurrency or rate limit does.
func busyServer(t *testing.T, busy map[string]struct {
	n          int
	code       int
	retryAfter string
}) (*http.ServeMux, func(string) []string) {
	t.Helper()
	var mu sync.Mutex
	seen := map[string][]string{} // endpoint -> seconds asked, per request
	real := pprofMux()
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		name := strings.TrimPrefix(r.URL.Path, "/debug/pprof/")
		mu.Lock()
		seen[name] = append(seen[name], r.FormValue("seconds"))
		n := len(seen[name])
		b, ok := busy[name]
		mu.Unlock()
		if ok && n <= b.n {
			if b.retryAfter != "" {
				w.Header().Set("Retry-After", b.retryAfter)
			}
			http.Error(w, "too many concurrent profile requests", b.code)
			return
		}
		real.ServeHTTP(w, r)
	})
	return mux, func(name string) []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), seen[name]...)
	}
}

func items(m *bundle.Manifest) map[string]bundle.Item {
	out := map[string]bundle.Item{}
	for _, it := range m.Items {
		out[it.Name] = it
	}
	return out
}

func readProfile(t *testing.T, path string) *profile.Profile {
	return testprof.Read(t, path)
}

// A 503 or 429 is asked again with backoff inside the window: the retried
// lock profile asks for the time left and covers it; a Retry-After past
// the window is respected, and the item fails saying so.
func TestCollectRetriesBusyServer(t *testing.T) {
	burnCPU(t)
	type busy = struct {
		n          int
		code       int
		retryAfter string
	}
	mux, asked := busyServer(t, map[string]busy{
		"profile": {2, http.StatusServiceUnavailable, "1"},
		"mutex":   {2, http.StatusServiceUnavailable, ""},
		"allocs":  {1, http.StatusTooManyRequests, ""},
		"block":   {1, http.StatusTooManyRequests, "3600"},
	})
	srv := serve(t, mux)
	out := filepath.Join(t.TempDir(), "b")
	m, err := Collect(t.Context(), Options{Target: srv.URL, Duration: 4 * time.Second, OutDir: out, Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	got := items(m)
	for name, want := range map[string]struct {
		status   string
		attempts int
		text     string
	}{
		"cpu":    {bundle.StatusOK, 3, "retried after 503 x2"},
		"mutex":  {bundle.StatusOK, 3, "retried after 503 x2); covers the last"},
		"allocs": {bundle.StatusOK, 2, "retried after 429"},
		"block":  {bundle.StatusFailed, 0, "HTTP 429 Too Many Requests: too many concurrent profile requests (1 attempt; its Retry-After (3600) is past the window)"},
	} {
		it := got[name]
		if it.Status != want.status || it.Attempts != want.attempts || !strings.Contains(it.Note+it.Error, want.text) {
			t.Errorf("%s: %s, %d attempts, note %q, error %q; want %s, %d attempts, %q", name, it.Status, it.Attempts, it.Note, it.Error, want.status, want.attempts, want.text)
		}
	}
	// Each retry of a timed profile asks for what is left of the window.
	for _, name := range []string{"profile", "mutex"} {
		secs := asked(name)
		if len(secs) != 3 || secs[0] != "4" || secs[2] != "1" && secs[2] != "2" && secs[2] != "3" {
			t.Errorf("%s asked for seconds %v, want 4 then less", name, secs)
		}
	}
	if d := time.Duration(readProfile(t, filepath.Join(out, bundle.MutexFile)).DurationNanos); d < time.Second || d >= 4*time.Second {
		t.Errorf("retried mutex profile covers %s, want the rest of the 4s window", d)
	}
	if !strings.Contains(m.Summary(out), "mutex: 3 attempts") {
		t.Errorf("summary does not say what the retries cost:\n%s", m.Summary(out))
	}
}

// contendBeforeWindow makes mutex contention that the collection window
// must not count.
func contendBeforeWindow() {
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 200 {
				mu.Lock()
				time.Sleep(10 * time.Microsecond)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
}

// A server whose profile endpoints ignore seconds: the CPU profile (which
// would run the handler's default 30 s) is cut at the window plus the
// margin and the item fails saying why; the lock profiles, served at once
// as counts since the process started, become the difference of two
// snapshots over the window.
func TestCollectServerIgnoresSeconds(t *testing.T) {
	defer runtime.SetMutexProfileFraction(runtime.SetMutexProfileFraction(1))
	contendBeforeWindow()
	real := pprofMux()
	srv := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/debug/pprof/profile":
			q := r.URL.Query()
			q.Del("seconds") // net/http/pprof's default: 30 s
			r.URL.RawQuery = q.Encode()
			pprof.Profile(w, r)
		case "/debug/pprof/mutex", "/debug/pprof/block":
			q := r.URL.Query()
			q.Del("seconds")
			r.URL.RawQuery = q.Encode()
			real.ServeHTTP(w, r)
		default:
			real.ServeHTTP(w, r)
		}
	}))
	out := filepath.Join(t.TempDir(), "b")
	m, err := Collect(t.Context(), Options{Target: srv.URL, Duration: 2 * time.Second, OutDir: out, Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	got := items(m)
	if cpu := got["cpu"]; cpu.Status != bundle.StatusFailed || !strings.Contains(cpu.Error, "the 2s window and a 5.2s margin): the server does not end the profile when asked to (seconds=2)") {
		t.Errorf("cpu: %s %q", cpu.Status, cpu.Error)
	}
	if !m.Partial {
		t.Error("a bundle without its CPU profile is not marked partial")
	}
	// Cut at the bound, not held for the server's 30 s.
	if took := m.End.Sub(m.Start); took >= 20*time.Second {
		t.Errorf("a 2s collection took %s", took)
	}
	for _, name := range []string{"mutex", "block"} {
		it := got[name]
		if it.Status != bundle.StatusOK || !strings.Contains(it.Note, "the server ignored seconds: the difference of snapshots") {
			t.Errorf("%s: %s %q, note %q", name, it.Status, it.Error, it.Note)
		}
	}
	p := readProfile(t, filepath.Join(out, bundle.MutexFile))
	if d := time.Duration(p.DurationNanos); d < time.Second || d > 10*time.Second {
		t.Errorf("mutex profile covers %s, want about the 2s window", d)
	}
	for _, s := range p.Sample {
		for _, loc := range s.Location {
			for _, l := range loc.Line {
				if strings.Contains(l.Function.Name, "contendBeforeWindow") {
					t.Fatalf("contention from before the window counted: %v", s.Value)
				}
			}
		}
	}
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for h, want := range map[string]time.Duration{
		"3":                             3 * time.Second,
		"0":                             0,
		"Fri, 02 Jan 2026 03:04:15 GMT": 10 * time.Second,
		"Fri, 02 Jan 2026 03:04:00 GMT": 0, // in the past: at once
	} {
		if got, ok := parseRetryAfter(h, now); !ok || got != want {
			t.Errorf("%q: %s %v, want %s", h, got, ok, want)
		}
	}
	for _, h := range []string{"", "soon", "-1"} {
		if _, ok := parseRetryAfter(h, now); ok {
			t.Errorf("%q parsed", h)
		}
	}
}
