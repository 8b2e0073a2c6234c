package mcpserver

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func testServer(t *testing.T, roots ...string) *server {
	t.Helper()
	s := &server{}
	for _, r := range roots {
		real, err := filepath.EvalSymlinks(r)
		if err != nil {
			t.Fatal(err)
		}
		s.roots = append(s.roots, real)
	}
	return s
}

// Paths resolve inside the allowed folders only: no way out through
// "..", an absolute path or a symlink, and nothing is written over.
func TestPathsConfined(t *testing.T) {
	root, other := t.TempDir(), t.TempDir()
	s := testServer(t, root)
	if err := os.WriteFile(filepath.Join(root, "cpu.pb.gz"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(other, "secret"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(other, filepath.Join(root, "escape")); err != nil {
		t.Fatal(err)
	}
	if p, err := s.readPath("cpu.pb.gz"); err != nil || p != filepath.Join(s.roots[0], "cpu.pb.gz") {
		t.Errorf("relative path in the root: %q, %v", p, err)
	}
	for _, p := range []string{filepath.Join(other, "secret"), "../" + filepath.Base(other) + "/secret", "escape/secret", "/"} {
		if _, err := s.readPath(p); err == nil || !strings.Contains(err.Error(), "outside the allowed folders") {
			t.Errorf("read %s: %v", p, err)
		}
	}
	if _, err := s.writePath("cpu.pb.gz"); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Errorf("write over a file: %v", err)
	}
	if _, err := s.writePath("escape/new"); err == nil || !strings.Contains(err.Error(), "outside the allowed folders") {
		t.Errorf("write through a symlink out: %v", err)
	}
	if p, err := s.writePath("new"); err != nil || p != filepath.Join(s.roots[0], "new") {
		t.Errorf("new bundle in the root: %q, %v", p, err)
	}
}

func TestTargets(t *testing.T) {
	s := &server{targets: []string{"10.0.0.5:6060", "db.internal"}}
	for _, ok := range []string{"http://127.0.0.1:6060", "http://[::1]:6060/debug/pprof/", "http://localhost:8080/", "http://10.0.0.5:6060", "http://db.internal:9000/"} {
		if err := s.checkTarget(ok); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	for _, bad := range []string{"http://10.0.0.5:6061", "http://192.0.2.1/", "127.0.0.1:6060", "not a url"} {
		if err := s.checkTarget(bad); err == nil {
			t.Errorf("%s: allowed", bad)
		}
	}
}

// fitPage keeps the answer within the bound and hands back a cursor to
// the rest; the pages cover every item once.
func TestFitPage(t *testing.T) {
	items := make([]string, 200)
	for i := range items {
		items[i] = strings.Repeat("x", 100) + string(rune('a'+i%26))
	}
	var got []string
	for start := 0; ; {
		var a struct {
			Items []string `json:"items"`
			Next  string   `json:"next_cursor,omitempty"`
		}
		if err := fitPage(items, start, 100, &a, func(p []string, next string) { a.Items, a.Next = p, next }); err != nil {
			t.Fatal(err)
		}
		if b, _ := json.Marshal(a); len(b) > MaxAnswer {
			t.Fatalf("page of %d bytes", len(b))
		}
		if len(a.Items) == 0 {
			t.Fatalf("no progress at %d", start)
		}
		got = append(got, a.Items...)
		if a.Next == "" {
			break
		}
		var err error
		if start, err = parseCursor(a.Next); err != nil {
			t.Fatal(err)
		}
	}
	if len(got) != len(items) {
		t.Errorf("pages hold %d items of %d", len(got), len(items))
	}
	if _, err := parseCursor("-1"); err == nil {
		t.Error("negative cursor accepted")
	}
}

func TestClip(t *testing.T) {
	if got := clip("héllo wörld", 8); len(got) > 8 || !strings.HasSuffix(got, "…") {
		t.Errorf("clip: %q", got)
	}
	if clip("short", 10) != "short" {
		t.Error("clipped a short string")
	}
}

// A JVM is recorded as the CLI records it: the window waits for the JIT to
// settle (90 s at most unless asked), and a run's load lasts that long too.
func TestJVMWaitsForTheJIT(t *testing.T) {
	s := testServer(t)
	pid := os.Getpid() // any live process: the collector is only built here
	for _, c := range []struct {
		settle *float64
		want   string // the lead, or the error
	}{
		{nil, "1m30s"},
		{ptr(0), "0s"},
		{ptr(20), "20s"},
		{ptr(-1), "jit_settle_seconds -1 out of range 0..600"},
		{ptr(601), "jit_settle_seconds 601 out of range 0..600"},
	} {
		_, _, lead, err := s.collector(liveTarget{JVMPID: pid, JITSettleSeconds: c.settle})
		got := lead.String()
		if err != nil {
			got = err.Error()
		}
		if got != c.want {
			t.Errorf("jit_settle_seconds %v: %s, want %s", c.settle, got, c.want)
		}
	}
	if _, _, lead, err := s.collector(liveTarget{PerfPID: pid}); err != nil || lead != 0 {
		t.Errorf("perf: lead %s, %v", lead, err)
	}
}

// verify waits for a JVM side's JIT as the CLI does, and counts the wait
// in the time it may take.
func TestVerifySettleBounds(t *testing.T) {
	s := testServer(t)
	in := verifyInput{Before: "http://127.0.0.1:1/", After: "http://127.0.0.1:2/"}
	for _, c := range []struct {
		settle *float64
		rounds int
		want   string
	}{
		{ptr(-1), 0, "jit_settle_seconds -1 out of range 0..600"},
		{ptr(600), 0, "verify would take up to 20m32s, over 10m0s"},
		// 20 rounds of 11 s fit alone (7m20s), not with both sides' 90 s.
		{nil, 20, "verify would take up to 10m20s, over 10m0s"},
	} {
		in.JITSettleSeconds, in.Rounds = c.settle, c.rounds
		in.DurationSeconds, in.WarmupSeconds = 0, 0
		if c.rounds == 20 {
			in.DurationSeconds, in.WarmupSeconds = 10, 1
		}
		_, err := s.verify(t.Context(), in)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("jit_settle_seconds %v, rounds %d: %v, want %q", c.settle, c.rounds, err, c.want)
		}
	}
}

func ptr(v float64) *float64 { return &v }
