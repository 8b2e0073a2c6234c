// Package native runs the casebook's native case end to end: a C service
// (pages.c) built with gcc by the test, loaded on loopback, recorded with
// `perfdoctor collect --perf PID` and diagnosed with the perfdoctor binary.
// Its hot function must be named with its source file and line.
package native

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/perfdoctor/perfdoctor/load"
)

var bin struct{ perfdoctor, pages string }

func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() {
		fmt.Println("native casebook: skipped in -short mode")
		os.Exit(0)
	}
	dir, err := os.MkdirTemp("", "perfdoctor-native")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	bin.perfdoctor = filepath.Join(dir, "perfdoctor")
	bin.pages = filepath.Join(dir, "pages")
	code := 1
	if out, err := exec.Command("go", "build", "-o", bin.perfdoctor, "../../cmd/perfdoctor").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "go build: %v\n%s", err, out)
	} else {
		code = m.Run()
	}
	os.RemoveAll(dir)
	os.Exit(code)
}

func inCI() bool {
	v := strings.ToLower(os.Getenv("CI"))
	return v != "" && v != "0" && v != "false"
}

// build compiles the service as a production build would, plus debug info
// and frame pointers so perf can walk stacks and name source lines.
func build(t *testing.T) {
	t.Helper()
	for _, tool := range []string{"gcc", "perf"} {
		if _, err := exec.LookPath(tool); err != nil {
			if inCI() {
				t.Fatalf("CI is set and %s is missing: scripts/test.sh installs it", tool)
			}
			t.Skipf("skipped: no %s on PATH", tool)
		}
	}
	if _, err := os.Stat(bin.pages); err == nil {
		return
	}
	out, err := exec.Command("gcc", "-O2", "-g", "-fno-omit-frame-pointer", "-Wall", "-Werror", "-pthread", "-o", bin.pages, filepath.Join("pages", "pages.c")).CombinedOutput()
	if err != nil {
		t.Fatalf("gcc: %v\n%s", err, out)
	}
}

// start runs a variant and returns its PID and URL; it is stopped with the test.
func start(t *testing.T, variant string) (int, string) {
	t.Helper()
	cmd := exec.Command(bin.pages, variant, "0")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	})
	ready := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		if sc.Scan() {
			ready <- sc.Text()
		}
		close(ready)
	}()
	select {
	case line := <-ready:
		port, ok := strings.CutPrefix(line, "listening ")
		if !ok {
			t.Fatalf("pages %s: unexpected first line %q", variant, line)
		}
		return cmd.Process.Pid, "http://127.0.0.1:" + port + "/"
	case <-time.After(10 * time.Second):
		t.Fatalf("pages %s not ready in 10s", variant)
	}
	return 0, ""
}

type finding struct {
	Rule, Class, Severity, Summary string
	Impact                         float64
	Locations                      []struct {
		Function, File string
		Line           int
		Share          float64
	}
}

// diagnose loads the service, records it with perf through the perfdoctor
// binary meanwhile, and returns the findings.
func diagnose(t *testing.T, pid int, url string) []finding {
	t.Helper()
	const warmup, window = time.Second, 4 * time.Second
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	loaded := make(chan error, 1)
	go func() {
		res, err := load.Run(ctx, load.Config{URL: url, Concurrency: 4, Duration: warmup + window + 5*time.Second})
		if err == nil {
			t.Logf("load: %d requests, %d errors", res.Requests, res.Errors)
		}
		loaded <- err
	}()
	time.Sleep(warmup)
	dir := filepath.Join(t.TempDir(), "bundle")
	out, err := exec.Command(bin.perfdoctor, "collect", "--perf", fmt.Sprint(pid), "-d", window.String(), "-o", dir).CombinedOutput()
	cancel()
	if lerr := <-loaded; lerr != nil {
		t.Errorf("load: %v", lerr)
	}
	if err != nil {
		if strings.Contains(string(out), "not permitted") && !inCI() {
			t.Skipf("perf not permitted here: %s", out)
		}
		t.Fatalf("perfdoctor collect --perf: %v\n%s", err, out)
	}
	stdout, err := exec.Command(bin.perfdoctor, "diagnose", dir, "--format", "json").Output()
	if err != nil {
		t.Fatalf("perfdoctor diagnose: %v", err)
	}
	var doc struct{ Findings []finding }
	if err := json.Unmarshal(stdout, &doc); err != nil {
		t.Fatalf("diagnose JSON: %v\n%s", err, stdout)
	}
	for i, f := range doc.Findings {
		t.Logf("%d. %s %s %s impact %.2f: %s", i+1, f.Severity, f.Class, f.Rule, f.Impact, f.Summary)
	}
	return doc.Findings
}

// TestNativeHotFunction: on bad, the top finding is the hot function
// page_etag, located at its loop in pages.c; on fixed, page_etag is not
// reported.
func TestNativeHotFunction(t *testing.T) {
	build(t)
	t.Run("bad", func(t *testing.T) {
		pid, url := start(t, "bad")
		findings := diagnose(t, pid, url)
		if len(findings) == 0 || findings[0].Class != "hot-function" || !strings.Contains(findings[0].Summary, "page_etag") {
			t.Fatalf("top finding is not the hot function page_etag: %+v", findings)
		}
		loc := findings[0].Locations
		if len(loc) == 0 || loc[0].Function != "page_etag" || filepath.Base(loc[0].File) != "pages.c" || loc[0].Line < 40 || loc[0].Line > 48 {
			t.Errorf("page_etag not located at its loop in pages.c (lines 40-48): %+v", loc)
		}
	})
	t.Run("fixed", func(t *testing.T) {
		pid, url := start(t, "fixed")
		for _, f := range diagnose(t, pid, url) {
			if strings.Contains(f.Summary, "page_etag") {
				t.Errorf("page_etag still reported: %+v", f)
			}
		}
	})
}
