package collect

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/pprof"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	rpprof "runtime/pprof"
	"strings"
	"testing"
	"time"

	"github.com/google/pprof/profile"
	"github.com/perfdoctor/perfdoctor/bundle"
	"github.com/perfdoctor/perfdoctor/collect/system"
	"github.com/perfdoctor/perfdoctor/internal/progress"
	"github.com/perfdoctor/perfdoctor/internal/redact"
)

// pprofMux serves net/http/pprof on a private mux, as a service would.
func pprofMux() *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	for _, name := range []string{"heap", "allocs", "goroutine", "mutex", "block"} {
		mux.Handle("/debug/pprof/"+name, pprof.Handler(name))
	}
	return mux
}

func serve(t *testing.T, h http.Handler) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(h) // a real server on 127.0.0.1:0
	t.Cleanup(srv.Close)
	return srv
}

// burnCPU keeps a goroutine busy so the CPU profile has samples.
func burnCPU(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		x := 0
		for ctx.Err() == nil {
			for i := range 100000 {
				x += i * i
			}
		}
		_ = x
	}()
	t.Cleanup(func() { cancel(); <-done })
}

func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelDebug}))
}

func TestCollectLocal(t *testing.T) {
	burnCPU(t)
	srv := serve(t, pprofMux())
	out := filepath.Join(t.TempDir(), "b1")
	if err := os.Mkdir(out, 0o755); err != nil { // an empty OutDir is fine
		t.Fatal(err)
	}
	var status bytes.Buffer
	m, err := Collect(t.Context(), Options{
		Target:   srv.URL,
		Duration: time.Second,
		OutDir:   out,
		Progress: progress.To(&status),
		Logger:   testLogger(t),
	})
	if err != nil {
		t.Fatal(err)
	}
	if m.Partial || len(m.Items) != 15 {
		t.Errorf("partial=%v items=%d", m.Partial, len(m.Items))
	}
	servesLeaks := rpprof.Lookup("goroutineleak") != nil // Go >= 1.27, or 1.26 with the experiment
	for _, it := range m.Items {
		if it.Name == "goroutineleak" && !servesLeaks {
			if it.Status != bundle.StatusSkipped || !strings.Contains(it.Error, "does not serve goroutineleak") {
				t.Errorf("item goroutineleak on %s: %s %s, want skipped", runtime.Version(), it.Status, it.Error)
			}
			continue
		}
		if it.Status != bundle.StatusOK {
			t.Errorf("item %s: %s %s", it.Name, it.Status, it.Error)
		}
	}
	if m.PID != os.Getpid() {
		t.Errorf("pid = %d, want this process %d", m.PID, os.Getpid())
	}
	if m.Runtime.GoVersion != runtime.Version() || m.Target != srv.URL+"/debug/pprof/" || time.Duration(m.Duration) != time.Second {
		t.Errorf("manifest = %+v", m)
	}

	// The bundle on disk is what the manifest says.
	disk, err := bundle.ReadManifest(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(disk.Items) != len(m.Items) || disk.PID != m.PID {
		t.Errorf("manifest on disk differs: %+v", disk)
	}
	for _, name := range []string{bundle.CPUFile, bundle.HeapFile, bundle.HeapStartFile, bundle.AllocsFile, bundle.GoroutineFile, bundle.GoroutineStartFile, bundle.MutexFile, bundle.BlockFile} {
		f, err := os.Open(filepath.Join(out, name))
		if err != nil {
			t.Error(err)
			continue
		}
		p, err := profile.Parse(f)
		f.Close()
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if name == bundle.CPUFile && len(p.Sample) == 0 {
			t.Errorf("cpu profile has no samples")
		}
		// Lock profiles cover the window (the handler's delta), so rules
		// can turn waits into a rate without the process start time.
		if d := time.Duration(p.DurationNanos); (name == bundle.MutexFile || name == bundle.BlockFile) && (d < time.Second || d > 2*time.Second) {
			t.Errorf("%s covers %v, want the 1s window", name, d)
		}
	}
	trace, err := os.ReadFile(filepath.Join(out, bundle.TraceFile))
	if err != nil || !bytes.HasPrefix(trace, []byte("go 1.")) {
		t.Errorf("trace: %v, starts %q", err, trace[:min(len(trace), 16)])
	}
	var st0, st1 bundle.RuntimeStats
	readJSON(t, filepath.Join(out, bundle.MetricsStartFile), &st0)
	readJSON(t, filepath.Join(out, bundle.MetricsEndFile), &st1)
	if st0.HeapAlloc == 0 || !st1.Time.After(st0.Time) || st1.TotalAlloc < st0.TotalAlloc {
		t.Errorf("metrics: start %+v end %+v", st0, st1)
	}
	var sys bundle.SystemSnapshot
	readJSON(t, filepath.Join(out, bundle.SystemEndFile), &sys)
	if sys.Process == nil || sys.Process.PID != os.Getpid() || sys.Machine.NumCPU == 0 {
		t.Errorf("system snapshot: %+v", sys)
	}
	noLeftovers(t, filepath.Dir(out))
	if !strings.Contains(status.String(), "collecting cpu profile") {
		t.Errorf("progress never shown: %q", status.String())
	}
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Error(err)
		return
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Errorf("%s: %v", path, err)
	}
}

// noLeftovers checks that no temporary bundle directory remains.
func noLeftovers(t *testing.T, parent string) {
	t.Helper()
	ents, _ := os.ReadDir(parent)
	for _, e := range ents {
		if strings.Contains(e.Name(), ".partial-") {
			t.Errorf("leftover %s", e.Name())
		}
	}
}

func closedPort(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

func TestCollectRejectsTarget(t *testing.T) {
	htmlSite := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.Write([]byte("<!DOCTYPE html><html><body>Welcome to our shop</body></html>"))
	}))
	jsonAPI := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"status":"ok","heap":1}`))
	}))
	notFound := serve(t, http.NotFoundHandler())
	closed := closedPort(t)
	for _, tc := range []struct {
		target, want string
	}{
		{"http://" + closed, "target http://" + closed + "/debug/pprof/ is unreachable: connection refused"},
		{"http://admin:hunter2@" + closed + "/?token=s3cret", "target http://admin:REDACTED@" + closed + "/debug/pprof/?token=REDACTED is unreachable: connection refused"},
		{htmlSite.URL, htmlSite.URL + "/debug/pprof/ does not serve Go pprof (got an HTML page that is not the pprof index)"},
		{jsonAPI.URL + "/debug/pprof", jsonAPI.URL + "/debug/pprof/ does not serve Go pprof (got JSON, not the pprof index)"},
		{notFound.URL, notFound.URL + "/debug/pprof/ does not serve Go pprof (got 404 Not Found)"},
		{"localhost:6060", "target localhost:6060 has no scheme: want http://localhost:6060"},
		{"ftp://host/", `scheme must be http or https, not "ftp"`},
		{"http:///debug/pprof/", "has no host"},
	} {
		out := filepath.Join(t.TempDir(), "b")
		_, err := Collect(t.Context(), Options{Target: tc.target, Duration: time.Second, OutDir: out})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Collect(%s):\n got %v\nwant %s", tc.target, err, tc.want)
			continue
		}
		if strings.Contains(err.Error(), "hunter2") || strings.Contains(err.Error(), "s3cret") {
			t.Errorf("credentials leak: %v", err)
		}
		if _, err := os.Stat(out); !os.IsNotExist(err) {
			t.Errorf("Collect(%s) wrote %s", tc.target, out)
		}
		noLeftovers(t, filepath.Dir(out))
	}
}

func TestCollectOptions(t *testing.T) {
	full := t.TempDir()
	os.WriteFile(filepath.Join(full, "x"), nil, 0o644)
	closed := "http://" + closedPort(t)
	for _, tc := range []struct {
		opt  Options
		want string
	}{
		{Options{Target: closed, Duration: 0, OutDir: "b"}, "duration 0s is too short: the minimum is 1s"},
		{Options{Target: closed, Duration: 10 * time.Hour, OutDir: "b"}, "duration 10h0m0s is too long: the maximum is 10m0s"},
		{Options{Target: closed, Duration: time.Second}, "no output directory"},
		{Options{Target: closed, Duration: time.Second, OutDir: full}, "output directory " + full + " already exists and is not empty"},
		{Options{Target: "", Duration: time.Second, OutDir: "b"}, "no target given"},
		{Options{Target: closed, Duration: time.Second, OutDir: "b", MaxBytes: -1}, "size limit -1 is negative"},
	} {
		_, err := Collect(t.Context(), tc.opt)
		if err == nil || err.Error() != tc.want && !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%+v:\n got %v\nwant %s", tc.opt, err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), "\n") {
			t.Errorf("multi-line error: %q", err)
		}
	}
}

func TestParseTarget(t *testing.T) {
	for in, want := range map[string]string{
		"http://h:6060":                      "http://h:6060/debug/pprof/",
		"http://h:6060/":                     "http://h:6060/debug/pprof/",
		"http://h:6060/debug/pprof":          "http://h:6060/debug/pprof/",
		"http://h:6060/debug/pprof/":         "http://h:6060/debug/pprof/",
		"HTTPS://h/admin/debug/pprof/#x":     "https://h/admin/debug/pprof/",
		"http://h/admin":                     "http://h/admin/debug/pprof/",
		" http://[::1]:6060/debug/pprof?a=b": "http://[::1]:6060/debug/pprof/?a=b",
	} {
		u, err := parseTarget(in)
		if err != nil || u.String() != want {
			t.Errorf("parseTarget(%q) = %v, %v; want %s", in, u, err, want)
		}
	}
}

func pprofLookupHeap(w *bytes.Buffer) error { return rpprof.Lookup("heap").WriteTo(w, 0) }

// brokenServer serves the pprof index and good runtime statistics, but
// profiles that are truncated, HTML, refused or too large.
func brokenServer(t *testing.T) *httptest.Server {
	var heap bytes.Buffer
	if err := pprofLookupHeap(&heap); err != nil {
		t.Fatal(err)
	}
	truncated := heap.Bytes()[:heap.Len()/2]
	real := pprofMux()
	return serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch strings.TrimPrefix(r.URL.Path, "/debug/pprof/") {
		case "":
			pprof.Index(w, r)
		case "heap":
			if r.FormValue("debug") == "1" {
				real.ServeHTTP(w, r)
				return
			}
			w.Write([]byte("<html><body>please log in</body></html>"))
		case "profile", "allocs":
			w.Write(truncated)
		case "trace":
			w.Write([]byte("<html><body>nope</body></html>"))
		case "goroutine":
			http.Error(w, "Could not enable profiling: busy", http.StatusInternalServerError)
		case "mutex":
			w.Write(bytes.Repeat([]byte("x"), 2<<20))
		default:
			real.ServeHTTP(w, r)
		}
	}))
}

func TestCollectBrokenProfiles(t *testing.T) {
	srv := brokenServer(t)
	out := filepath.Join(t.TempDir(), "b")
	m, err := Collect(t.Context(), Options{Target: srv.URL, Duration: time.Second, OutDir: out, MaxBytes: 1 << 20, Logger: testLogger(t)})
	if err != nil {
		t.Fatalf("some items succeeded, want no error: %v", err)
	}
	if !m.Partial {
		t.Error("not partial")
	}
	want := map[string]string{
		"cpu":           "failed: not a profile: decompressing profile: unexpected EOF",
		"allocs":        "failed: not a profile: decompressing profile: unexpected EOF",
		"heap":          "failed: not a profile: got an HTML page",
		"heap-start":    "failed: not a profile: got an HTML page",
		"trace":         "failed: not a Go execution trace: got an HTML page",
		"goroutine":     "failed: HTTP 500 Internal Server Error: Could not enable profiling: busy",
		"mutex":         "failed: response larger than the 1 MiB size limit",
		"block":         "ok: ",
		"metrics-start": "ok: ",
		"metrics-end":   "ok: ",
	}
	for _, it := range m.Items {
		w, ok := want[it.Name]
		if !ok {
			continue
		}
		if got := it.Status + ": " + it.Error; got != w {
			t.Errorf("%s = %q, want %q", it.Name, got, w)
		}
	}
	if _, err := os.Stat(filepath.Join(out, bundle.CPUFile)); !os.IsNotExist(err) {
		t.Errorf("a failed item's file was written: %v", err)
	}
	if _, err := bundle.ReadManifest(out); err != nil {
		t.Error(err)
	}
}

func TestCollectAllFailed(t *testing.T) {
	srv := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/debug/pprof/" {
			pprof.Index(w, r)
			return
		}
		http.NotFound(w, r)
	}))
	out := filepath.Join(t.TempDir(), "b")
	m, err := Collect(t.Context(), Options{Target: srv.URL, Duration: time.Second, OutDir: out})
	if err == nil || !strings.Contains(err.Error(), "no profile could be collected") || !strings.Contains(err.Error(), "404 Not Found") {
		t.Fatalf("err = %v", err)
	}
	if m == nil || !m.Partial {
		t.Fatalf("manifest = %+v", m)
	}
	// The manifest is still written so the user sees why.
	disk, err := bundle.ReadManifest(out)
	if err != nil || len(disk.Failed()) < 10 {
		t.Errorf("manifest on disk: %+v, %v", disk, err)
	}
}

func TestCollectInterrupted(t *testing.T) {
	heapServed := make(chan struct{}, 2)
	mux := pprofMux()
	srv := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mux.ServeHTTP(w, r)
		if r.URL.Path == "/debug/pprof/heap" && r.FormValue("debug") == "" {
			heapServed <- struct{}{}
		}
	}))
	ctx, cancel := context.WithCancel(t.Context())
	go func() {
		<-heapServed
		time.Sleep(200 * time.Millisecond) // let heap-start be written; the CPU profile runs for 10s
		cancel()
	}()
	out := filepath.Join(t.TempDir(), "b")
	start := time.Now()
	m, err := Collect(ctx, Options{Target: srv.URL, Duration: 10 * time.Second, OutDir: out, Logger: testLogger(t)})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if time.Since(start) > 5*time.Second {
		t.Errorf("took %v after cancel", time.Since(start))
	}
	if m == nil || !m.Partial {
		t.Fatalf("manifest = %+v", m)
	}
	disk, err := bundle.ReadManifest(out)
	if err != nil {
		t.Fatal(err)
	}
	status := map[string]string{}
	for _, it := range disk.Items {
		status[it.Name] = it.Status + ": " + it.Error
	}
	for name, want := range map[string]string{
		"heap-start": "ok: ",
		"cpu":        "failed: interrupted",
		"trace":      "failed: interrupted",
		"heap":       "failed: interrupted",
		"system-end": "failed: interrupted",
	} {
		if status[name] != want {
			t.Errorf("%s = %q, want %q", name, status[name], want)
		}
	}
	if _, err := os.Stat(filepath.Join(out, bundle.HeapStartFile)); err != nil {
		t.Error(err)
	}
	noLeftovers(t, filepath.Dir(out))
}

func TestCollectRedactsCredentials(t *testing.T) {
	mux := pprofMux()
	srv := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The credentials reach the server on every request.
		if u, p, ok := r.BasicAuth(); !ok || u != "admin" || p != "hunter2" || r.FormValue("token") != "s3cret" {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		mux.ServeHTTP(w, r)
	}))
	target := strings.Replace(srv.URL, "http://", "http://admin:hunter2@", 1) + "/debug/pprof/?token=s3cret"
	out := filepath.Join(t.TempDir(), "b")
	var logs bytes.Buffer
	m, err := Collect(t.Context(), Options{Target: target, Duration: time.Second, TraceDuration: -1, OutDir: out,
		Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		// A /proc where nothing listens on the port: the target looks remote.
		Roots: system.Roots{Proc: "system/testdata/proc", Sys: "system/testdata/sys-v2"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if m.Partial {
		t.Errorf("failed: %+v", m.Failed())
	}
	// Skipped items do not make a bundle partial.
	for _, it := range m.Items {
		if strings.HasPrefix(it.Name, "system-") && (it.Status != bundle.StatusSkipped || !strings.Contains(it.Error, "no local socket listens")) {
			t.Errorf("%s = %+v, want skipped", it.Name, it)
		}
	}
	if m.PID != 0 || !strings.HasPrefix(m.Runtime.Source, "not known: ") || m.Runtime.GoVersion != "" {
		t.Errorf("pid %d, runtime %+v", m.PID, m.Runtime)
	}
	if st := m.Items[1]; st.Name != "trace" || st.Status != bundle.StatusSkipped {
		t.Errorf("trace item = %+v, want skipped", st)
	}
	b, _ := os.ReadFile(filepath.Join(out, bundle.ManifestFile))
	for _, secret := range []string{"hunter2", "s3cret"} {
		if bytes.Contains(b, []byte(secret)) || strings.Contains(logs.String(), secret) {
			t.Errorf("%s leaked into the manifest or logs", secret)
		}
	}
	if !strings.Contains(m.Target, "admin:REDACTED@") || !strings.Contains(m.Target, "token=REDACTED") {
		t.Errorf("target = %s", m.Target)
	}
}

func TestConfirmLocal(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		files   []string
		keepPID bool
	}{
		{[]string{exe}, true},
		{[]string{"[vdso]", exe + " (deleted)"}, true},
		{nil, true}, // nothing to compare
		{[]string{"/usr/local/bin/kubectl", "/lib/libc.so.6"}, false},
	} {
		c := &collector{settings: &settings{Options: Options{Logger: slog.New(slog.DiscardHandler)}}, pid: os.Getpid()}
		p := &profile.Profile{}
		for i, f := range tc.files {
			p.Mapping = append(p.Mapping, &profile.Mapping{ID: uint64(i + 1), File: f})
		}
		c.confirmLocal(p)
		if (c.pid != 0) != tc.keepPID {
			t.Errorf("mappings %q: pid %d, notLocal %q", tc.files, c.pid, c.notLocal)
		}
		if !tc.keepPID && !strings.Contains(c.notLocal, "port forward") {
			t.Errorf("reason = %q", c.notLocal)
		}
	}
}

// FuzzParseTarget checks that an accepted target is normalised for good
// (parsing the result again changes nothing) and never shown with its password.
func FuzzParseTarget(f *testing.F) {
	for _, s := range []string{"http://h:6060", "http://u:pw@h/debug/pprof?token=x", "https://[::1]:1/a/debug/pprof/", "localhost:6060", "http://h/%zz"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		u, err := parseTarget(raw)
		if err != nil {
			return
		}
		if !strings.HasSuffix(u.Path, "/debug/pprof/") || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
			t.Fatalf("parseTarget(%q) = %s", raw, u)
		}
		again, err := parseTarget(u.String())
		if err != nil || again.String() != u.String() {
			t.Fatalf("not idempotent: %q -> %s -> %v, %v", raw, u, again, err)
		}
		if _, ok := u.User.Password(); ok {
			shown, err := url.Parse(redact.URL(u))
			if pw, _ := shown.User.Password(); err != nil || pw != redact.Redacted {
				t.Fatalf("password shown in %s (%v)", redact.URL(u), err)
			}
		}
	})
}
