package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"testing"
)

// perfdoctor runs the CLI in-process and returns its exit code and output.
func perfdoctor(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = run(context.Background(), args, &out, &errOut)
	return code, out.String(), errOut.String()
}

// wantOneLineError checks the contract for bad input: a non-zero exit and
// a single line naming the problem, never a panic or a stack trace.
func wantOneLineError(t *testing.T, code int, stderr, want string) {
	t.Helper()
	if code == 0 {
		t.Fatalf("exit 0, want an error containing %q", want)
	}
	lines := strings.Split(strings.TrimRight(stderr, "\n"), "\n")
	last := lines[len(lines)-1]
	if !strings.HasPrefix(last, "perfdoctor: ") || !strings.Contains(last, want) {
		t.Errorf("stderr = %q, want a line 'perfdoctor: ...%s...'", stderr, want)
	}
	if strings.Contains(stderr, "goroutine ") || strings.Contains(stderr, "panic") {
		t.Errorf("stack trace in stderr: %s", stderr)
	}
}

func closedPort(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

func TestCollectBadTargets(t *testing.T) {
	notPprof := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.Write([]byte("<html><body>Welcome to my shop</body></html>"))
	}))
	defer notPprof.Close()
	dir := t.TempDir()
	for name, tc := range map[string]struct {
		args []string
		want string
		code int
	}{
		"unreachable":   {[]string{"collect", "http://" + closedPort(t), "-d", "1s", "-o", filepath.Join(dir, "a")}, "unreachable", exitError},
		"not pprof":     {[]string{"collect", notPprof.URL, "-d", "1s", "-o", filepath.Join(dir, "b")}, "does not serve Go pprof", exitError},
		"zero duration": {[]string{"collect", notPprof.URL, "-d", "0", "-o", filepath.Join(dir, "c")}, "too short", exitError},
		"huge duration": {[]string{"collect", notPprof.URL, "-d", "10h", "-o", filepath.Join(dir, "d")}, "maximum", exitError},
		"bad duration":  {[]string{"collect", notPprof.URL, "-d", "soon"}, "invalid argument", exitUsage},
		"no url":        {[]string{"collect"}, "accepts 1 arg", exitUsage},
		"not a url":     {[]string{"collect", "localhost:6060", "-o", filepath.Join(dir, "e")}, "no scheme", exitError},
	} {
		t.Run(name, func(t *testing.T) {
			code, _, stderr := perfdoctor(t, tc.args...)
			wantOneLineError(t, code, stderr, tc.want)
			if code != tc.code {
				t.Errorf("exit %d, want %d", code, tc.code)
			}
		})
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("failed collections left %d entries behind", len(entries))
	}
}

func TestDiagnoseBadInputs(t *testing.T) {
	dir := t.TempDir()
	var buf bytes.Buffer
	pprof.Lookup("heap").WriteTo(&buf, 0)
	corrupt := filepath.Join(dir, "cpu.pb.gz")
	os.WriteFile(corrupt, buf.Bytes()[:buf.Len()/2], 0o644)
	empty := filepath.Join(dir, "empty")
	os.Mkdir(empty, 0o755)
	for name, tc := range map[string]struct {
		args []string
		want string
	}{
		"corrupt profile": {[]string{"diagnose", corrupt}, "not a valid profile"},
		"empty directory": {[]string{"diagnose", empty}, "empty directory"},
		"missing path":    {[]string{"diagnose", filepath.Join(dir, "nope")}, "no such file"},
		"no path":         {[]string{"diagnose"}, "at least one PATH"},
		"unknown format":  {[]string{"diagnose", corrupt, "--format", "yaml"}, "unknown --format"},
		"bad fail-on":     {[]string{"diagnose", corrupt, "--fail-on", "severe"}, "--fail-on"},
		"unknown rule":    {[]string{"explain", "XYZ999"}, "no rule"},
	} {
		t.Run(name, func(t *testing.T) {
			code, _, stderr := perfdoctor(t, tc.args...)
			wantOneLineError(t, code, stderr, tc.want)
		})
	}
}

func TestDiagnoseLooseHeapProfileJSON(t *testing.T) {
	dir := t.TempDir()
	var buf bytes.Buffer
	pprof.Lookup("heap").WriteTo(&buf, 0)
	path := filepath.Join(dir, "heap")
	os.WriteFile(path, buf.Bytes(), 0o644)
	code, stdout, stderr := perfdoctor(t, "diagnose", path, "--format", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var doc struct {
		Findings   []json.RawMessage
		NotChecked []struct{ Rule, Reason string } `json:"not_checked"`
	}
	if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, stdout)
	}
	// Only a heap profile: every CPU rule must say what it needs.
	if len(doc.Findings) != 0 || len(doc.NotChecked) < 4 || doc.NotChecked[0].Reason != "needs cpu" {
		t.Errorf("findings %d, not checked %+v", len(doc.Findings), doc.NotChecked)
	}
}

func TestRulesAndExplain(t *testing.T) {
	code, stdout, _ := perfdoctor(t, "rules")
	for _, id := range []string{"GC001", "SCHED001", "NET001", "CPU001"} {
		if code != 0 || !strings.Contains(stdout, id) {
			t.Errorf("rules output lacks %s:\n%s", id, stdout)
		}
	}
	code, stdout, _ = perfdoctor(t, "explain", "gc-pressure")
	if code != 0 || !strings.Contains(stdout, "GOMEMLIMIT") || !strings.Contains(stdout, "# GC001") {
		t.Errorf("explain gc-pressure:\n%s", stdout)
	}
}
