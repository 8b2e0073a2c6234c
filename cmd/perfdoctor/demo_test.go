package main

import (
	"context"
	"encoding/json"
	"os"
	"os/signal"
	"path/filepath"
	"sync"
	"syscall"
	"testing"

	"github.com/perfdoctor/perfdoctor/internal/fleettest"
)

// asCLI makes the test binary act as perfdoctor when demo re-executes
// itself (os.Executable is the test binary) to start its sample service.
const asCLI = "PERFDOCTOR_TEST_AS_CLI"

func TestMain(m *testing.M) {
	fleettest.MaybeServe() // this binary also plays the fleet test's services
	if os.Getenv(asCLI) == "1" {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
		stop()
		os.Exit(code)
	}
	afterTests(stopSharedPostgres)
	code := m.Run()
	for i := len(cleanups) - 1; i >= 0; i-- {
		cleanups[i]()
	}
	os.Exit(code)
}

// cleanups are what afterTests was given, run last first.
var (
	cleanupMu sync.Mutex
	cleanups  []func()
)

// afterTests runs f when every test of the package has run: the end of a
// fixture that tests share (a binary built once, a server started once).
func afterTests(f func()) {
	cleanupMu.Lock()
	defer cleanupMu.Unlock()
	cleanups = append(cleanups, f)
}

// TestDemo runs the demo end to end on its own sample service: the GC is
// the bottleneck it must find (the README shows it first), and it leaves a
// bundle and the reports. The window is long enough for the CPU profile to
// hold enough samples on a busy machine.
func TestDemo(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a service and loads it")
	}
	t.Setenv(asCLI, "1")
	dir := filepath.Join(t.TempDir(), "demo")
	code, stdout, stderr := perfdoctor(t, "demo", "-d", "8s", "-o", dir)
	if code != exitOK {
		t.Fatalf("demo exited %d:\n%s%s", code, stdout, stderr)
	}
	b, err := os.ReadFile(filepath.Join(dir, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Findings []struct{ Rule string }
		Load     *struct{ Requests int64 }
	}
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, f := range rep.Findings {
		found = found || f.Rule == "GC001"
	}
	if !found {
		t.Errorf("the demo found no GC pressure (GC001): %+v\n%s", rep.Findings, stdout)
	}
	if rep.Load == nil || rep.Load.Requests == 0 {
		t.Errorf("the report has no load figures")
	}
	for _, f := range []string{"bundle/manifest.json", "bundle/cpu.pb.gz", "bundle/load.json", "report.txt", "report.html"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Error(err)
		}
	}
}
