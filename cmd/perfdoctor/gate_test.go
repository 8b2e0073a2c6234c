package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/perfdoctor/perfdoctor/gate"
)

// buildGateDemo builds internal/gatedemo, with extraPercent planted.
func buildGateDemo(t *testing.T, extraPercent int) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), fmt.Sprintf("gatedemo-%d", extraPercent))
	out, err := exec.Command("go", "build", "-ldflags", fmt.Sprintf("-X main.extraPercent=%d", extraPercent), "-o", bin,
		"github.com/perfdoctor/perfdoctor/internal/gatedemo").CombinedOutput()
	if err != nil {
		t.Fatalf("building gatedemo: %v\n%s", err, out)
	}
	return bin
}

// gateServices runs the gate on two builds of gatedemo started by the gate
// itself; with pprof it also profiles both.
func gateServices(t *testing.T, baseBin, headBin string, pprof bool, extra ...string) (code int, md string, res gate.Result, dir string) {
	t.Helper()
	base, head := closedPort(t), closedPort(t)
	dir = t.TempDir()
	args := []string{"gate", "--out", dir, "--rounds", "6", "-d", "1s", "--warmup", "300ms", "-c", "4", "--threshold", "0.1",
		"--base-cmd", "exec " + baseBin + " -listen " + base, "--base", "http://" + base + "/",
		"--head-cmd", "exec " + headBin + " -listen " + head, "--head", "http://" + head + "/"}
	if pprof {
		args = append(args, "--base-pprof", "http://"+base, "--head-pprof", "http://"+head, "--profile-window", "2s")
	}
	code, md, stderr := perfdoctor(t, append(args, extra...)...)
	b, err := os.ReadFile(filepath.Join(dir, "gate.json"))
	if err != nil {
		t.Fatalf("exit %d, no gate.json: %v\n%s", code, err, stderr)
	}
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatal(err)
	}
	t.Logf("exit %d, %s: %s", code, res.Verdict, res.Why)
	return code, md, res, dir
}

// TestGateServices: a head build doing 50% more work per request is a
// regression, with the function that grew in the comment; the same build
// on both sides passes (started anew for every round, both measured at
// once). The threshold is 10%: on a busy machine a round's ratio strays by
// about 10%, so six rounds put the planted run's interval well above it and
// keep the A/A estimate well below.
func TestGateServices(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and loads two services")
	}
	base, slow := buildGateDemo(t, 0), buildGateDemo(t, 50)

	code, md, res, dir := gateServices(t, base, slow, true)
	if code != exitRegression || res.Verdict != gate.Regression {
		t.Fatalf("planted 50%%: exit %d, verdict %q (%s)\n%s", code, res.Verdict, res.Why, md)
	}
	cpu := res.Figures[0]
	if cpu.Name != "CPU/request" || !cpu.Judged || !cpu.Worse || cpu.Low <= 1 {
		t.Errorf("judged figure %+v", cpu)
	}
	for _, want := range []string{gate.Marker, "perfdoctor gate: performance regression", "| CPU/request |", "**worse**",
		"### Functions that got hotter", "| function | flat base → head |", "### New or grown findings", "paired t-test"} {
		if !strings.Contains(md, want) {
			t.Errorf("comment lacks %q:\n%s", want, md)
		}
	}
	// The loop that does the planted work usually heads the growers; on a
	// busy machine a short profile can rank runtime functions above it.
	if !strings.Contains(md, "`main.checksum`") {
		t.Logf("main.checksum is not among the functions that got hotter:\n%s", md)
	}
	if saved, err := os.ReadFile(filepath.Join(dir, "gate.md")); err != nil || string(saved) != md {
		t.Errorf("gate.md is not the comment printed: %v", err)
	}
	for _, name := range []string{"diff.html", "verify.json", "verify.html", "base/report.html", "head/report.json", "head/bundle/manifest.json"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}

	// A/A with each build started anew per round, both loaded at once.
	code, md, res, _ = gateServices(t, base, base, false, "--fresh", "--together", "--rate", "200")
	if code != 0 || res.Verdict != gate.Pass {
		t.Fatalf("A/A: exit %d, verdict %q (%s)\n%s", code, res.Verdict, res.Why, md)
	}
	if !strings.Contains(md, "perfdoctor gate: no performance regression") || !strings.Contains(md, "No profile diff: no --base-pprof") {
		t.Errorf("A/A comment:\n%s", md)
	}
}

// benchmarkBuild writes a package whose benchmark does work, plus extra
// work in a function of its own when slow, and runs it as CI would.
func benchmarkBuild(t *testing.T, slow bool) (bench, profile string) {
	t.Helper()
	dir := t.TempDir()
	extra := "return 0"
	if slow {
		extra = "return mix(2 * n)"
	}
	src := fmt.Sprintf(`package work

import "testing"

func mix(n int) uint64 {
	h := uint64(1469598103)
	for i := range n {
		h ^= uint64(i)
		h *= 1099511628211
	}
	return h
}

//go:noinline
func extra(n int) uint64 { %s }

var sink uint64

func BenchmarkWork(b *testing.B) {
	for b.Loop() {
		sink += mix(20000) + extra(20000)
	}
}
`, extra)
	for name, text := range map[string]string{"go.mod": "module example.com/work\n\ngo 1.24\n", "work_test.go": src} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	profile = filepath.Join(dir, "cpu.pprof")
	cmd := exec.Command("go", "test", "-run", "^$", "-bench", ".", "-count", "8", "-benchtime", "100ms", "-cpuprofile", profile)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go test -bench: %v\n%s", err, out)
	}
	bench = filepath.Join(dir, "bench.txt")
	if err := os.WriteFile(bench, out, 0o644); err != nil {
		t.Fatal(err)
	}
	return bench, profile
}

// TestGateBenchmarks: go test -bench results and CPU profiles of a base
// and a head whose benchmark does three times the work, two thirds of it
// in a new function: far beyond the noise of a busy machine (runs of one
// build were seen to spread from 36 to 95 µs).
func TestGateBenchmarks(t *testing.T) {
	if testing.Short() {
		t.Skip("runs benchmarks")
	}
	baseBench, baseProf := benchmarkBuild(t, false)
	headBench, headProf := benchmarkBuild(t, true)
	dir := t.TempDir()
	code, md, stderr := perfdoctor(t, "gate", "--out", dir, "--threshold", "0.25",
		"--base-bench", baseBench, "--base-profile", baseProf, "--head-bench", headBench, "--head-profile", headProf)
	if code != exitRegression {
		t.Fatalf("exit %d, want %d\n%s\n%s\nbase:\n%s\nhead:\n%s", code, exitRegression, md, stderr, readFile(t, baseBench), readFile(t, headBench))
	}
	for _, want := range []string{"| example.com/work.BenchmarkWork-", "ns/op", "**worse**", "`work.extra`", "Welch's t-test"} {
		if !strings.Contains(md, want) {
			t.Errorf("comment lacks %q:\n%s", want, md)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "diff.html")); err != nil {
		t.Error(err)
	}
	code, md, stderr = perfdoctor(t, "gate", "--out", t.TempDir(), "--threshold", "0.25", "--base-bench", baseBench, "--head-bench", baseBench)
	if code != 0 || !strings.Contains(md, "no performance regression") {
		t.Errorf("A/A: exit %d\n%s\n%s", code, md, stderr)
	}
}

func TestGateBadInput(t *testing.T) {
	dir := t.TempDir()
	notBench := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(notBench, []byte("PASS\nok  example.com/x 0.1s\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	for name, tc := range map[string]struct {
		args []string
		want string
	}{
		"nothing":        {[]string{"gate", "--out", out}, "gate needs --base URL --head URL"},
		"both modes":     {[]string{"gate", "--out", out, "--base", "http://127.0.0.1:1/", "--base-bench", notBench}, "gate needs --base URL --head URL"},
		"no out":         {[]string{"gate", "--base-bench", notBench, "--head-bench", notBench}, "--out DIR is required"},
		"threshold":      {[]string{"gate", "--out", out, "--threshold", "5", "--base-bench", notBench, "--head-bench", notBench}, "--threshold 5 out of range"},
		"judge":          {[]string{"gate", "--out", out, "--judge", "speed", "--base", "http://127.0.0.1:1/", "--head", "http://127.0.0.1:2/"}, `--judge "speed"`},
		"same url":       {[]string{"gate", "--out", out, "--base", "http://127.0.0.1:1/", "--head", "http://127.0.0.1:1/"}, "the same URL"},
		"one pprof":      {[]string{"gate", "--out", out, "--base", "http://127.0.0.1:1/", "--head", "http://127.0.0.1:2/", "--base-pprof", "http://127.0.0.1:3"}, "give both --base-pprof and --head-pprof"},
		"not bench":      {[]string{"gate", "--out", out, "--base-bench", notBench, "--head-bench", notBench}, "no benchmark results"},
		"missing bench":  {[]string{"gate", "--out", out, "--base-bench", filepath.Join(dir, "none.txt"), "--head-bench", notBench}, "--base-bench"},
		"one bench":      {[]string{"gate", "--out", out, "--base-bench", notBench}, "gate needs both --base-bench FILE and --head-bench FILE"},
		"fresh no cmd":   {[]string{"gate", "--out", out, "--fresh", "--base", "http://127.0.0.1:1/", "--head", "http://127.0.0.1:2/"}, "--fresh starts each build"},
		"settle range":   {[]string{"gate", "--out", out, "--jit-settle", "11m", "--base", "http://127.0.0.1:1/", "--head", "http://127.0.0.1:2/"}, "--jit-settle 11m0s out of range 0..10m"},
		"settle fresh":   {[]string{"gate", "--out", out, "--fresh", "--jit-settle", "30s", "--base-cmd", "true", "--head-cmd", "true", "--base", "http://127.0.0.1:1/", "--head", "http://127.0.0.1:2/"}, "--jit-settle does not apply with --fresh"},
		"profile alone":  {[]string{"gate", "--out", out, "--base", "http://127.0.0.1:1/", "--head", "http://127.0.0.1:2/", "--base-profile", notBench}, "go with --base-bench"},
		"nobody listens": {[]string{"gate", "--out", out, "--rounds", "2", "-d", "1s", "--warmup", "0s", "--base", "http://" + closedPort(t) + "/", "--head", "http://" + closedPort(t) + "/"}, "perfdoctor: "},
	} {
		t.Run(name, func(t *testing.T) {
			code, _, stderr := perfdoctor(t, tc.args...)
			wantOneLineError(t, code, stderr, tc.want)
		})
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
