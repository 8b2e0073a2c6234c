package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/pprof/profile"

	"github.com/perfdoctor/perfdoctor/internal/testprof"
	"github.com/perfdoctor/perfdoctor/report/web"
)

// writeProfile saves a synthetic CPU profile and returns its path.
func writeProfile(t *testing.T, dir, name string, p *profile.Profile) string {
	t.Helper()
	path := filepath.Join(dir, name)
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := p.Write(f); err != nil {
		t.Fatal(err)
	}
	return path
}

func gcHeavy(gc int64) *profile.Profile {
	return testprof.Build(
		testprof.Stack{Value: gc, Funcs: []string{"runtime.scanObject", "runtime.gcBgMarkWorker"}},
		testprof.Stack{Value: 250, Funcs: []string{"net.(*netFD).connect", "net.DialUDP", "main.send"}},
		testprof.Stack{Value: 450, Funcs: []string{"main.work", "main.main"}},
	)
}

func TestDiagnoseNewFormats(t *testing.T) {
	dir := t.TempDir()
	cpu := writeProfile(t, dir, "cpu.pb.gz", gcHeavy(300))
	// Both findings are high; the collector's 30% is estimated at 1.3
	// times (what fixes removed beyond their frames), above keeping the
	// connections at 1.5 times the dial's 25%, so it ranks first.
	for format, want := range map[string]string{
		"html":     `<article class="finding sev-high" id="finding-1" data-rank="1" data-rule="GC001"`,
		"markdown": "| 1 | **high** | gc-pressure | GC001 |",
		"sarif":    `"ruleId": "GC001"`,
	} {
		t.Run(format, func(t *testing.T) {
			out := filepath.Join(dir, "report."+format)
			code, stdout, stderr := perfdoctor(t, "diagnose", cpu, "--format", format, "-o", out)
			if code != exitOK || stdout != "" {
				t.Fatalf("exit %d, stdout %q, stderr %q", code, stdout, stderr)
			}
			b, err := os.ReadFile(out)
			if err != nil || !strings.Contains(string(b), want) {
				t.Errorf("%s output lacks %q (err %v)", format, want, err)
			}
			if format == "sarif" && !json.Valid(b) {
				t.Error("SARIF is not JSON")
			}
		})
	}
	code, _, stderr := perfdoctor(t, "diagnose", cpu, "--format", "pdf")
	wantOneLineError(t, code, stderr, "html, json, markdown, sarif, text")
	if code != exitUsage {
		t.Errorf("exit %d, want %d", code, exitUsage)
	}
}

func TestDiff(t *testing.T) {
	dir := t.TempDir()
	before := writeProfile(t, dir, "before.pb.gz", gcHeavy(100))
	after := writeProfile(t, dir, "after.pb.gz", gcHeavy(500))

	code, stdout, stderr := perfdoctor(t, "diff", before, after)
	if code != exitOK || !strings.Contains(stdout, "The biggest grower is runtime.") || !strings.Contains(stdout, "Biggest shrinkers") {
		t.Fatalf("exit %d\n%s%s", code, stdout, stderr)
	}

	// runtime.scanObject goes from 100/800 to 500/1200 of the samples: +29 points.
	code, _, stderr = perfdoctor(t, "diff", before, after, "--fail-on-regression", "25")
	if code != exitFindings || !strings.Contains(stderr, "regression: ") || !strings.Contains(stderr, "more than the 25.0 allowed") {
		t.Errorf("--fail-on-regression 25: exit %d, stderr %q", code, stderr)
	}
	if code, _, stderr = perfdoctor(t, "diff", before, after, "--fail-on-regression", "40"); code != exitOK {
		t.Errorf("--fail-on-regression 40: exit %d, stderr %q", code, stderr)
	}
	// Shrinking is no regression.
	if code, _, stderr = perfdoctor(t, "diff", after, before, "--fail-on-regression", "25"); code != exitOK {
		t.Errorf("reverse diff: exit %d, stderr %q", code, stderr)
	}

	out := filepath.Join(dir, "diff.html")
	if code, _, stderr = perfdoctor(t, "diff", before, after, "--format", "html", "-o", out); code != exitOK {
		t.Fatalf("html: exit %d %s", code, stderr)
	}
	if b, _ := os.ReadFile(out); !bytes.Contains(b, []byte("Differential flame graph")) {
		t.Error("diff.html lacks the flame graph")
	}
	code, stdout, _ = perfdoctor(t, "diff", before, after, "--format", "json")
	var d struct {
		Kind    string
		Growers []struct{ Function string }
	}
	if err := json.Unmarshal([]byte(stdout), &d); err != nil || code != exitOK || d.Kind != "cpu" || len(d.Growers) == 0 {
		t.Errorf("json: exit %d err %v %+v", code, err, d)
	}

	for name, c := range map[string]struct {
		args []string
		want string
		code int
	}{
		"one arg":      {[]string{"diff", before}, "accepts 2 arg", exitUsage},
		"bad format":   {[]string{"diff", before, after, "--format", "sarif"}, "unknown --format", exitUsage},
		"bad percent":  {[]string{"diff", before, after, "--fail-on-regression", "-3"}, "between 0 and 100", exitUsage},
		"missing file": {[]string{"diff", before, filepath.Join(dir, "nope")}, "B: input", exitError},
		"wrong kind":   {[]string{"diff", before, after, "--kind", "heap"}, "neither input has a heap profile", exitError},
	} {
		t.Run(name, func(t *testing.T) {
			code, _, stderr := perfdoctor(t, c.args...)
			wantOneLineError(t, code, stderr, c.want)
			if code != c.code {
				t.Errorf("exit %d, want %d", code, c.code)
			}
		})
	}
}

func TestViewRefusesRemoteAddresses(t *testing.T) {
	dir := t.TempDir()
	cpu := writeProfile(t, dir, "cpu.pb.gz", gcHeavy(300))
	for _, addr := range []string{"0.0.0.0:0", ":0", "192.0.2.1:8080", "example.com:80"} {
		code, _, stderr := perfdoctor(t, "view", cpu, "--http", addr)
		wantOneLineError(t, code, stderr, "--allow-remote")
		if code != exitUsage {
			t.Errorf("%s: exit %d, want %d", addr, code, exitUsage)
		}
	}
	code, _, stderr := perfdoctor(t, "view", cpu, "--http", "nonsense")
	wantOneLineError(t, code, stderr, "want host:port")
	for _, addr := range []string{"127.0.0.1:0", "localhost:8080", "[::1]:80", "127.1.2.3:9"} {
		if _, err := web.CheckListenAddr(addr, false); err != nil {
			t.Errorf("%s refused: %v", addr, err)
		}
	}
	if loop, err := web.CheckListenAddr("0.0.0.0:0", true); err != nil || loop {
		t.Errorf("--allow-remote: loopback %v, err %v", loop, err)
	}
}

// syncBuffer is an io.Writer safe to read while the command writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func get(t *testing.T, url, host string) (int, string) {
	t.Helper()
	req, err := http.NewRequest("GET", url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if host != "" {
		req.Host = host
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestViewServesReportAndPprof(t *testing.T) {
	dir := t.TempDir()
	cpu := writeProfile(t, dir, "cpu.pb.gz", gcHeavy(300))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout, stderr syncBuffer
	done := make(chan int, 1)
	go func() { done <- run(ctx, []string{"view", cpu, "--http", "127.0.0.1:0"}, &stdout, &stderr) }()

	urlRE := regexp.MustCompile(`http://127\.0\.0\.1:\d+/`)
	var base string
	for deadline := time.Now().Add(20 * time.Second); base == "" && time.Now().Before(deadline); {
		select {
		case code := <-done:
			t.Fatalf("view exited %d: %s", code, stderr.String())
		case <-time.After(20 * time.Millisecond):
		}
		base = urlRE.FindString(stdout.String())
	}
	if base == "" {
		t.Fatalf("no URL printed: %q", stdout.String())
	}
	if !strings.Contains(stdout.String(), "pprof cpu") || !strings.Contains(stdout.String(), "Ctrl-C") {
		t.Errorf("stdout: %s", stdout.String())
	}

	code, body := get(t, base, "")
	if code != 200 || !strings.Contains(body, `data-rule="GC001"`) || !strings.Contains(body, `"links":{"cpu":"/pprof/cpu/"}`) {
		t.Errorf("report: %d, links or cards missing", code)
	}
	for path, want := range map[string]string{
		"pprof/cpu/flamegraph":            "main.work",
		"pprof/cpu/top":                   "runtime.scanObject",
		"pprof/cpu/peek?f=main.send":      "net.DialUDP",
		"pprof/cpu/source?f=main.work":    "main.work",
		"pprof/":                          `href="cpu/"`,
		"pprof/cpu/?si=cpu":               "main.work", // redirected to the flame graph
		"pprof/cpu/download":              "",
		"pprof/cpu/top?si=samples&f=main": "main",
	} {
		code, body := get(t, base+path, "")
		if code != 200 || !strings.Contains(body, want) {
			t.Errorf("GET /%s: %d, want 200 with %q", path, code, want)
		}
	}
	// Disassembly needs the binary, which a synthetic profile lacks: the
	// route is there and pprof explains.
	if code, body := get(t, base+"pprof/cpu/disasm?f=main.work", ""); code == 404 || body == "" {
		t.Errorf("disasm: %d", code)
	}
	if code, _ := get(t, base+"pprof/heap/top", ""); code != 404 {
		t.Errorf("a profile that is not there: %d", code)
	}
	// DNS rebinding: a loopback server answers only loopback host names.
	if code, _ := get(t, base, "attacker.example:80"); code != http.StatusForbidden {
		t.Errorf("foreign Host header: %d, want 403", code)
	}
	if code, _ := get(t, base, "localhost"); code != 200 {
		t.Errorf("Host localhost: %d", code)
	}

	cancel() // as Ctrl-C does
	select {
	case code := <-done:
		if code != exitOK {
			t.Errorf("view exited %d after Ctrl-C: %s", code, stderr.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("view did not stop")
	}
	if c, err := net.DialTimeout("tcp", strings.TrimSuffix(strings.TrimPrefix(base, "http://"), "/"), time.Second); err == nil {
		c.Close()
		t.Error("still listening after Ctrl-C")
	}
}
