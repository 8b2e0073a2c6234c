// Package native runs the casebook's native case end to end: a C service
// (pages/pages.c) built with gcc by the test, loaded on loopback, recorded
// with `perfdoctor collect --perf PID` and diagnosed with the perfdoctor
// binary. Its hot function must be named with its source file and line.
package native

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/perfdoctor/perfdoctor/casebook/internal/harness"
	"github.com/perfdoctor/perfdoctor/load"
)

var bin struct{ perfdoctor, pages string }

func TestMain(m *testing.M) {
	harness.Main(m, "native", map[string]*string{harness.Perfdoctor: &bin.perfdoctor})
}

// build compiles the service as a production build would, plus debug info
// and frame pointers so perf can walk stacks and name source lines.
func build(t *testing.T) {
	t.Helper()
	harness.Need(t, "gcc and linux-perf", "gcc", "perf")
	bin.pages = filepath.Join(filepath.Dir(bin.perfdoctor), "pages")
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
	port := harness.Start(t, cmd, "listening ", 10*time.Second)
	return cmd.Process.Pid, "http://127.0.0.1:" + port + "/"
}

// diagnose loads the service, records it with perf through the perfdoctor
// binary meanwhile, and returns the findings.
func diagnose(t *testing.T, pid int, url string) []harness.Finding {
	t.Helper()
	return diagnoseWith(t, pid, load.Config{URL: url, Concurrency: 4}).Findings
}

// diagnoseWith is diagnose with the load's settings (its Duration is set
// here), returning the whole report.
func diagnoseWith(t *testing.T, pid int, cfg load.Config) harness.Report {
	t.Helper()
	const warmup, window = time.Second, 4 * time.Second
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	loaded := make(chan error, 1)
	go func() {
		cfg.Duration = warmup + window + 5*time.Second
		res, err := load.Run(ctx, cfg)
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
		if strings.Contains(string(out), "not permitted") && !harness.InCI() {
			t.Skipf("perf not permitted here: %s", out)
		}
		t.Fatalf("perfdoctor collect --perf: %v\n%s", err, out)
	}
	return harness.Diagnose(t, bin.perfdoctor, dir)
}

// TestNativeHotFunction: on bad, the top finding is the hot function
// page_etag, located at its loop in pages.c; on fixed, page_etag is not
// reported.
func TestNativeHotFunction(t *testing.T) {
	build(t)
	t.Run("bad", func(t *testing.T) {
		pid, url := start(t, "bad")
		// pages answers one request per connection, so the test's own
		// load can open more connections a second than TIME_WAIT lets a
		// destination take: NET002 then reports them at low, blaming
		// "another process on the host" (the load), and a process on
		// half the CPUs ranks such a latency finding before a CPU one of
		// its grade. The case is about pages' own cost.
		findings := slices.DeleteFunc(diagnose(t, pid, url), func(f harness.Finding) bool {
			return f.Class == "ephemeral-port-exhaustion" && strings.Contains(f.Summary, "another process on the host")
		})
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
