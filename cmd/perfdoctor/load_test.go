package main

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/pem"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/pprof"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/pprof/profile"

	"github.com/perfdoctor/perfdoctor/bundle"
	"github.com/perfdoctor/perfdoctor/load"
)

// closingServer accepts connections and closes them at once.
func closingServer(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	return "http://" + l.Addr().String() + "/"
}

func TestLoadBadInput(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer srv.Close()
	dir := t.TempDir()
	for name, tc := range map[string]struct {
		args []string
		want string
		code int
	}{
		"unreachable":       {[]string{"load", "http://" + closedPort(t), "-d", "1s"}, "every request failed (refused=", exitError},
		"closes every conn": {[]string{"load", closingServer(t), "-d", "1s", "-c", "2"}, "every request failed (reset=", exitError},
		"bad scheme":        {[]string{"load", "ftp://127.0.0.1/", "-d", "1s"}, "scheme must be http, https or udp", exitError},
		"no scheme":         {[]string{"load", "127.0.0.1:80", "-d", "1s"}, "scheme must be", exitError},
		"udp without port":  {[]string{"load", "udp://127.0.0.1", "-d", "1s"}, "udp needs a port", exitError},
		"rate 0":            {[]string{"load", srv.URL, "--rate", "0"}, "the rate must be > 0", exitUsage},
		"negative rate":     {[]string{"load", srv.URL, "--rate", "-5"}, "the rate must be > 0", exitUsage},
		"absurd rate":       {[]string{"load", srv.URL, "--rate", "1e9", "-d", "1s"}, "rate 1e+09 out of range", exitError},
		"zero duration":     {[]string{"load", srv.URL, "-d", "0"}, "--duration 0s out of range", exitUsage},
		"absurd duration":   {[]string{"load", srv.URL, "-d", "1000h"}, "out of range", exitUsage},
		"bad duration":      {[]string{"load", srv.URL, "-d", "soon"}, "invalid argument", exitUsage},
		"zero concurrency":  {[]string{"load", srv.URL, "-c", "0", "-d", "1s"}, "concurrency 0 out of range", exitError},
		"bad header":        {[]string{"load", srv.URL, "-H", "nocolon", "-d", "1s"}, "--header", exitUsage},
		"missing body":      {[]string{"load", srv.URL, "--body", filepath.Join(dir, "nope"), "-d", "1s"}, "no such file", exitError},
		"bad format":        {[]string{"load", srv.URL, "--format", "xml"}, "--format", exitUsage},
		"bad procs":         {[]string{"load", srv.URL, "--procs", "0"}, "--procs", exitUsage},
		"slo alone":         {[]string{"load", srv.URL, "--slo", "p99<1s", "-d", "1s"}, "--slo needs --find-max", exitUsage},
		"bad slo":           {[]string{"load", srv.URL, "--find-max", "--slo", "p99>1s"}, "SLO", exitUsage},
		"bad udp mode":      {[]string{"load", "udp://127.0.0.1:9", "--udp-mode", "maybe", "-d", "1s"}, "UDP mode", exitError},
		"no url":            {[]string{"load"}, "needs a URL", exitUsage},
	} {
		t.Run(name, func(t *testing.T) {
			start := time.Now()
			code, _, stderr := perfdoctor(t, tc.args...)
			wantOneLineError(t, code, stderr, tc.want)
			if code != tc.code {
				t.Errorf("exit %d, want %d", code, tc.code)
			}
			if el := time.Since(start); el > 15*time.Second {
				t.Errorf("took %s", el)
			}
		})
	}
}

func TestLoadJSON(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Key") != "k" || r.Method != "POST" {
			http.Error(w, "bad", 400)
		}
	}))
	defer srv.Close()
	dir := t.TempDir()
	body := filepath.Join(dir, "body.json")
	os.WriteFile(body, []byte(`{"q":1}`), 0o644)
	saved := filepath.Join(dir, "res.json")
	code, stdout, stderr := perfdoctor(t, "load", srv.URL, "-X", "POST", "-H", "X-Key: k", "--body", body,
		"--rate", "300", "-c", "4", "-d", "2100ms", "--format", "json", "-o", saved)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var res load.Result
	if err := json.Unmarshal([]byte(stdout), &res); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, stdout)
	}
	if res.Mode != "open" || res.Errors != 0 || res.Requests < 500 || len(res.Table) < 20 || len(res.Timeline) < 2 {
		t.Errorf("result %s, table %d rows, timeline %d", &res, len(res.Table), len(res.Timeline))
	}
	if b, err := os.ReadFile(saved); err != nil || !bytes.Contains(b, []byte(`"percentiles"`)) {
		t.Errorf("saved file: %v", err)
	}
	// The URL is saved as typed, credentials and all: the file is private.
	if fi, err := os.Stat(saved); err != nil || fi.Mode().Perm()&0o077 != 0 {
		t.Errorf("saved file's mode %v (%v), want none for group and others", fi.Mode(), err)
	}
	// Text output: the table and the timeline; with -o - they go to stderr,
	// stdout holding the JSON alone.
	code, stdout, stderr = perfdoctor(t, "load", srv.URL, "-X", "POST", "-H", "X-Key: k", "-c", "2", "-d", "1100ms", "-o", "-")
	for _, want := range []string{"closed loop, 2 workers", "p99.99", "second      ok/s"} {
		if code != 0 || !strings.Contains(stderr, want) {
			t.Errorf("text output lacks %q:\n%s", want, stderr)
		}
	}
	if err := json.Unmarshal([]byte(stdout), &res); err != nil || res.Mode != "closed" {
		t.Errorf("-o -: stdout is not the results' JSON (%v):\n%.300s", err, stdout)
	}
}

// TestLoadInterrupt: Ctrl-C ends a long run at once, and the figures are
// still printed and saved.
func TestLoadInterrupt(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { time.Sleep(time.Millisecond) }))
	defer srv.Close()
	saved := filepath.Join(t.TempDir(), "res.json")
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(500*time.Millisecond, cancel)
	var out, errOut bytes.Buffer
	start := time.Now()
	code := run(ctx, []string{"load", srv.URL, "-d", "10m", "-o", saved}, &out, &errOut)
	if el := time.Since(start); el > 5*time.Second {
		t.Fatalf("interrupt took %s", el)
	}
	wantOneLineError(t, code, errOut.String(), "interrupted")
	if !strings.Contains(out.String(), "requests ") || !strings.Contains(out.String(), "interrupted") {
		t.Errorf("no results printed:\n%s", out.String())
	}
	var res load.Result
	if b, err := os.ReadFile(saved); err != nil || json.Unmarshal(b, &res) != nil || !res.Interrupted || res.Requests == 0 {
		t.Errorf("saved results: %v %+v", err, res)
	}
}

// TestLoadFindMax: a server that serves at most 4 requests at a time, each
// in 10 ms, has a capacity near 400 req/s; the search must land near it.
func TestLoadFindMax(t *testing.T) {
	slots := make(chan struct{}, 4)
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
		slots <- struct{}{}
		time.Sleep(10 * time.Millisecond)
		<-slots
	}))
	defer srv.Close()
	code, stdout, stderr := perfdoctor(t, "load", srv.URL, "--find-max", "--slo", "p99<100ms", "--rate", "50", "--steps", "6", "-d", "1s", "-c", "64", "--timeout", "2s")
	t.Log(stdout)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var best float64
	for _, line := range strings.Split(stdout, "\n") {
		if v, ok := strings.CutPrefix(line, "highest rate meeting p99<100ms: "); ok {
			json.Unmarshal([]byte(strings.Fields(v)[0]), &best)
		}
	}
	if best < 100 || best > 450 {
		t.Errorf("best rate %g, want 100..450 (capacity ~400)", best)
	}
	if !strings.Contains(stdout, "fails: ") || !strings.Contains(stdout, "meets p99<100ms") {
		t.Errorf("step table lacks passing and failing steps")
	}
}

// appUnderLoad is the loaded endpoint: each request stays in flight for a
// while, so a goroutine profile under load shows it. A while is longer
// than the end-of-window snapshots take: the generator shares this test's
// process with them, and with 20 ms requests every request had finished,
// unanswered by a starved event loop, when the goroutine profile was taken
// (1 run in 6). The test runs with --procs 2: --procs sets the whole
// process's GOMAXPROCS, and with one P the server, the collector and the
// generator took turns on it (a CI run still found no request in flight).
func appUnderLoad(w http.ResponseWriter, r *http.Request) {
	time.Sleep(250 * time.Millisecond)
	w.Write(bytes.Repeat([]byte("x"), 100))
}

// TestRunCommand: load the test's own server, collect its pprof, diagnose;
// load.json goes into the bundle and the report.
func TestRunCommand(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	mux.HandleFunc("/app", appUnderLoad)
	srv := httptest.NewServer(mux)
	defer srv.Close()
	dir := filepath.Join(t.TempDir(), "out")
	code, stdout, stderr := perfdoctor(t, "run", "--target", srv.URL, "--load", srv.URL+"/app", "-d", "1s", "--warmup", "300ms", "-c", "4", "--procs", "2", "-o", dir, "--format", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var rep struct {
		Load *struct {
			Requests int64           `json:"requests"`
			Timeline json.RawMessage `json:"timeline"`
			Warmup   *struct {
				Requests   int64   `json:"requests"`
				Throughput float64 `json:"throughput_rps"`
			} `json:"warmup"`
		} `json:"load"`
	}
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil || rep.Load == nil || rep.Load.Requests == 0 {
		t.Fatalf("report has no load figures (%v):\n%s", err, stdout)
	}
	// The warm-up's rate is kept beside the window's: what the recording
	// cost the service.
	if w := rep.Load.Warmup; w == nil || w.Requests == 0 || w.Throughput <= 0 {
		t.Errorf("no warm-up figures in the load: %+v", w)
	}
	m, err := bundle.ReadManifest(filepath.Join(dir, "bundle"))
	if err != nil || !m.OK("load") || m.Load == nil || m.Load.URL != srv.URL+"/app" {
		t.Fatalf("manifest: %v %+v", err, m)
	}
	for _, f := range []string{"report.txt", "report.json", "report.html", "bundle/load.json"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Error(err)
		}
	}
	// The end-of-window goroutine profile was taken while the load ran:
	// requests are in flight in it, not an idle server. That needs a
	// window: the CPU profile fails at once when another test in this
	// process is profiling (one CPU profile per process), and then the end
	// comes before the first request.
	if !m.OK("cpu") {
		t.Skipf("no CPU profile window (failed items %+v): the end-of-window check needs one", m.Failed())
	}
	gp, err := os.Open(filepath.Join(dir, "bundle", bundle.GoroutineFile))
	if err != nil {
		t.Fatal(err)
	}
	defer gp.Close()
	p, err := profile.Parse(gp)
	if err != nil {
		t.Fatal(err)
	}
	var inFlight int64
	for _, s := range p.Sample {
		for _, loc := range s.Location {
			if len(loc.Line) > 0 && strings.HasSuffix(loc.Line[0].Function.Name, ".appUnderLoad") {
				inFlight += s.Value[0]
				break
			}
		}
	}
	if inFlight == 0 {
		t.Errorf("no request in flight in the end-of-window goroutine profile: the load had stopped")
	}
	code, _, stderr = perfdoctor(t, "run", "--target", srv.URL)
	wantOneLineError(t, code, stderr, "--load")
}

func TestVerifyTargets(t *testing.T) {
	fast := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer fast.Close()
	slow := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { time.Sleep(3 * time.Millisecond) }))
	defer slow.Close()
	args := []string{"verify", "--rounds", "3", "-d", "400ms", "--warmup", "0", "-c", "2"}

	code, stdout, stderr := perfdoctor(t, append(args, "--before", fast.URL, "--after", slow.URL)...)
	t.Log(stdout)
	if code != exitRegression || !strings.Contains(stdout, "verdict: slower") || !strings.Contains(stderr, "significant regression") {
		t.Errorf("fast -> slow: exit %d, want %d\n%s%s", code, exitRegression, stdout, stderr)
	}
	proof := filepath.Join(t.TempDir(), "proof")
	code, stdout, stderr = perfdoctor(t, append(args, "--before", slow.URL, "--after", fast.URL, "--format", "json", "--out", proof)...)
	var v struct {
		Verdict string
		Rounds  []struct{ First string }
	}
	if err := json.Unmarshal([]byte(stdout), &v); err != nil || code != 0 || v.Verdict != "faster" || len(v.Rounds) != 3 ||
		v.Rounds[0].First != "before" || v.Rounds[1].First != "after" {
		t.Errorf("slow -> fast: exit %d, %v, %+v\n%s", code, err, v, stderr)
	}
	// --out keeps the same result as JSON, Markdown and HTML.
	saved, err := os.ReadFile(filepath.Join(proof, "verify.json"))
	if err != nil || string(saved) != stdout {
		t.Errorf("verify.json differs from the JSON printed (%v)", err)
	}
	for name, want := range map[string]string{"verify.md": "**Verdict: faster**", "verify.html": `<svg class="round-chart"`} {
		if b, err := os.ReadFile(filepath.Join(proof, name)); err != nil || !strings.Contains(string(b), want) {
			t.Errorf("%s lacks %q (%v)", name, want, err)
		}
	}
	code, stdout, _ = perfdoctor(t, append(args, "--before", slow.URL, "--after", fast.URL, "--format", "markdown", "--rounds", "2")...)
	if code != 0 || !strings.Contains(stdout, "```mermaid") {
		t.Errorf("--format markdown: exit %d\n%s", code, stdout)
	}
}

func TestVerifyBadInput(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer srv.Close()
	free := "http://" + closedPort(t) + "/"
	for name, tc := range map[string]struct {
		args []string
		want string
	}{
		"no targets":    {[]string{"verify"}, "--before URL and --after URL"},
		"same url":      {[]string{"verify", "--before", srv.URL, "--after", srv.URL}, "same URL"},
		"one round":     {[]string{"verify", "--before", srv.URL, "--after", free, "--rounds", "1"}, "--rounds 1"},
		"settle bound":  {[]string{"verify", "--before", srv.URL, "--after", free, "--jit-settle", "11m"}, "--jit-settle 11m0s out of range 0..10m"},
		"unreachable":   {[]string{"verify", "--before", srv.URL, "--after", free, "-d", "300ms", "--warmup", "0"}, "every request failed (refused="},
		"command fails": {[]string{"verify", "--before", srv.URL, "--after", free, "--after-cmd", "echo no such service >&2; exit 3"}, "exited before"},
		"never ready":   {[]string{"verify", "--before", srv.URL, "--after", free, "--after-cmd", "sleep 30", "--ready-timeout", "500ms"}, "did not accept connections within 500ms"},
		"port taken":    {[]string{"verify", "--before", srv.URL, "--after", free, "--before-cmd", "sleep 30"}, "already accepts connections"},
	} {
		t.Run(name, func(t *testing.T) {
			start := time.Now()
			code, _, stderr := perfdoctor(t, tc.args...)
			wantOneLineError(t, code, stderr, tc.want)
			if el := time.Since(start); el > 10*time.Second {
				t.Errorf("took %s", el)
			}
		})
	}
}

// TestVerifyStopsWhatItStarted: the started command's processes are gone
// when verify returns, here after a readiness timeout.
func TestVerifyStopsWhatItStarted(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer srv.Close()
	pidFile := filepath.Join(t.TempDir(), "pid")
	code, _, stderr := perfdoctor(t, "verify", "--before", srv.URL, "--after", "http://"+closedPort(t)+"/",
		"--after-cmd", "sleep 30 & echo $! > "+pidFile+"; wait", "--ready-timeout", "500ms")
	wantOneLineError(t, code, stderr, "did not accept connections")
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	var pid int
	json.Unmarshal(bytes.TrimSpace(b), &pid)
	if pid <= 0 {
		t.Fatalf("pid file %q", b)
	}
	if _, err := os.Stat(filepath.Join("/proc", strings.TrimSpace(string(b)))); err == nil {
		st, _ := os.ReadFile(filepath.Join("/proc", strings.TrimSpace(string(b)), "stat"))
		if !bytes.Contains(st, []byte(") Z ")) { // a zombie waiting for its reaper is gone too
			t.Errorf("process %d (started by the command) still runs", pid)
		}
	}
}

// TestLoadHTTPSWithCACert: a TLS server with its own CA is refused until
// --cacert names that CA.
func TestLoadHTTPSWithCACert(t *testing.T) {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.StartTLS()
	defer srv.Close()
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o644); err != nil {
		t.Fatal(err)
	}
	requests := func(args ...string) load.Result {
		t.Helper()
		code, stdout, stderr := perfdoctor(t, append([]string{"load", srv.URL, "-c", "2", "-d", "500ms", "--format", "json"}, args...)...)
		var res load.Result
		if err := json.Unmarshal([]byte(stdout), &res); err != nil {
			t.Fatalf("exit %d, not JSON: %v\n%s", code, err, stderr)
		}
		return res
	}
	if res := requests(); res.Errors == 0 {
		t.Errorf("untrusted certificate accepted: %s", &res)
	}
	if res := requests("--cacert", ca); res.Errors != 0 || res.Requests == 0 {
		t.Errorf("with --cacert: %s", &res)
	}
	code, _, stderr := perfdoctor(t, "load", srv.URL, "--cacert", filepath.Join(t.TempDir(), "none.pem"))
	wantOneLineError(t, code, stderr, "--cacert")
}

// TestRunNativeWithLoadCommand: run observes any process through perf
// while a benchmark command is the load, and the bundle records the units
// it served, as for a server that speaks neither HTTP nor UDP.
func TestRunNativeWithLoadCommand(t *testing.T) {
	if _, err := exec.LookPath("perf"); err != nil {
		t.Skip("perf is not installed (scripts/test.sh installs linux-perf)")
	}
	busy := exec.Command("sh", "-c", "while :; do :; done")
	if err := busy.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { busy.Process.Kill(); busy.Wait() }()
	dir := filepath.Join(t.TempDir(), "out")
	code, stdout, stderr := perfdoctor(t, "run", "--perf", strconv.Itoa(busy.Process.Pid), "--load-cmd", "sleep 0.05",
		"--units", "20", "--unit", "GET", "-d", "1s", "--warmup", "100ms", "-o", dir)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(stdout, "`sleep 0.05`") || !strings.Contains(stdout, "GETs/s") {
		t.Errorf("the report does not describe the command load:\n%s", stdout)
	}
	m, err := bundle.ReadManifest(filepath.Join(dir, "bundle"))
	if err != nil || !m.OK("load") || m.Load == nil || m.Load.Command != "sleep 0.05" || m.Load.Unit != "GET" {
		t.Fatalf("manifest: %v %+v", err, m.Load)
	}
	b, err := os.ReadFile(filepath.Join(dir, "bundle", "load.json"))
	if err != nil {
		t.Fatal(err)
	}
	var l bundle.LoadResult
	if err := json.Unmarshal(b, &l); err != nil || l.Mode != "command" || l.Runs < 1 || l.Requests != 20*l.Runs {
		t.Fatalf("load.json (%v): %+v", err, l)
	}
	// --load beside --load-cmd is the target's address, filling {port}:
	// the command fails unless it was.
	code, _, stderr = perfdoctor(t, "run", "--perf", strconv.Itoa(busy.Process.Pid), "--load", "tcp://127.0.0.1:6399",
		"--load-cmd", "test {port} = 6399 && sleep 0.05", "--units", "1", "-d", "1s", "--warmup", "100ms", "-o", filepath.Join(t.TempDir(), "tcp"))
	if code != 0 {
		t.Fatalf("run --load tcp:// --load-cmd: exit %d: %s", code, stderr)
	}
	code, _, stderr = perfdoctor(t, "run", "--perf", "1", "--load", "http://127.0.0.1:1/", "--target", "http://127.0.0.1:2")
	wantOneLineError(t, code, stderr, "one target")
	code, _, stderr = perfdoctor(t, "run", "--perf", "1", "--load-cmd", "true")
	wantOneLineError(t, code, stderr, "--units")
}
