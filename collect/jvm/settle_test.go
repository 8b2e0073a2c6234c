package jvm

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/perfdoctor/perfdoctor/bundle"
)

// A thread's name may hold spaces and parentheses (the last ')' ends it),
// and a stat line cut short is a thread to skip, not a failure.
func TestCompilerThreads(t *testing.T) {
	root := fakeProc(t, map[string]uint64{"C2 CompilerThre": 1290, "C1 CompilerThre) b (c": 7, "http-nio-8080-e": 9000})
	short := filepath.Join(root, "4242", "task", "9")
	if err := os.MkdirAll(short, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(short, "stat"), []byte("9 (C1 CompilerThre) R 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := compilerCPU(root, 4242); err != nil || got != 12970*time.Millisecond {
		t.Errorf("compilerCPU = %s, %v; want 12.97s (1290 and 7 ticks of the two compiler threads)", got, err)
	}
	for comm, want := range map[string]bool{"C1 CompilerThre": true, "C2 CompilerThre": true, "JVMCI CompilerT": true,
		"JVMCI-native Co": true, "GC Thread#0": false, "http-nio-8080-e": false, "VM Thread": false} {
		if compilerThread(comm) != want {
			t.Errorf("compilerThread(%q) = %v", comm, !want)
		}
	}
}

// fakeProc writes /proc/4242/task/*/stat for threads named comm with ticks
// of CPU each.
func fakeProc(t *testing.T, threads map[string]uint64) string {
	t.Helper()
	root := t.TempDir()
	i := 0
	for comm, ticks := range threads {
		i++
		dir := filepath.Join(root, "4242", "task", string(rune('0'+i)))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		// The 52 fields a current kernel prints, the CPU as user time.
		line := "1 (" + comm + ") S 1 1 1 0 -1 0 0 0 0 0 " + strconv.FormatUint(ticks, 10) + " 0 0 0 20 0 1 0 1 0 0" +
			strings.Repeat(" 0", 30) + "\n"
		if err := os.WriteFile(filepath.Join(dir, "stat"), []byte(line), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func TestCompilerCPU(t *testing.T) {
	root := fakeProc(t, map[string]uint64{"C2 CompilerThre": 250, "C1 CompilerThre": 50, "http-nio-1-exec": 9000})
	got, err := compilerCPU(root, 4242)
	if err != nil || got != 3*time.Second {
		t.Errorf("compilerCPU = %s, %v; want 3s", got, err)
	}
	if _, err := compilerCPU(root, 1); err == nil {
		t.Error("no error for a process that is not there")
	}
}

// The figures of settle.go's doc comment: a JVM recompiling after the
// recording's start (C2 0.1-0.6 of a core, C1 up to 0.16) is not settled; a
// warm one (0.00-0.03, a lone second at 0.13) is.
func TestSettled(t *testing.T) {
	cum := func(perSecond ...float64) []time.Duration {
		out := []time.Duration{0}
		for _, c := range perSecond {
			out = append(out, out[len(out)-1]+time.Duration(c*float64(time.Second)))
		}
		return out
	}
	for _, c := range []struct {
		perSecond []float64
		want      bool
	}{
		{[]float64{0.00, 0.00}, false}, // not seconds enough yet
		{[]float64{0.44, 0.09, 0.11, 0.12}, false},
		{[]float64{0.30, 0.29, 0.44, 0.41}, false},
		{[]float64{0.27, 0.10, 0.18, 0.15}, false},
		{[]float64{0.01, 0.00, 0.00}, true},
		{[]float64{0.40, 0.02, 0.13, 0.00}, true},
		{[]float64{0.03, 0.01, 0.02}, true},
	} {
		if got, cores := settled(cum(c.perSecond...)); got != c.want {
			t.Errorf("%v: settled %v (%.3f cores), want %v", c.perSecond, got, cores, c.want)
		}
	}
}

// settle on a process whose compiler threads are idle records the wait as
// ok after settleSpan seconds; with a shorter bound, it begins the window
// at the bound and says the JIT was still compiling.
func TestSettle(t *testing.T) {
	if testing.Short() {
		t.Skip("waits seconds")
	}
	root := fakeProc(t, map[string]uint64{"C2 CompilerThre": 100})
	for _, c := range []struct {
		max  time.Duration
		note bool
	}{{10 * time.Second, false}, {time.Second, true}} {
		w, err := bundle.Create(filepath.Join(t.TempDir(), "b"))
		if err != nil {
			t.Fatal(err)
		}
		col := &collection{opt: Options{PID: 4242, Settle: c.max, Logger: slog.New(slog.DiscardHandler)}, w: w}
		col.opt.Roots.Proc = root
		t0 := time.Now()
		col.settle(context.Background())
		took := time.Since(t0)
		items := w.Items()
		if len(items) != 1 || items[0].Name != settleItem || items[0].Status != bundle.StatusOK {
			t.Fatalf("items %+v", items)
		}
		if got := strings.Contains(items[0].Note, "still used"); got != c.note {
			t.Errorf("bound %s: note %v in %+v", c.max, got, items[0])
		}
		if want := min(c.max, settleSpan*time.Second); took < want || took > want+2*time.Second {
			t.Errorf("bound %s: waited %s", c.max, took)
		}
		w.Abort()
	}
}

// WaitSettle on a process that is not there fails at once; interrupted, it
// returns the context's error.
func TestWaitSettleEnds(t *testing.T) {
	if _, err := WaitSettle(context.Background(), t.TempDir(), 4242, time.Minute, nil); err == nil || !strings.Contains(err.Error(), "JIT compiler threads' CPU") {
		t.Errorf("no process: %v", err)
	}
	root := fakeProc(t, map[string]uint64{"C2 CompilerThre": 100})
	ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	defer cancel()
	s, err := WaitSettle(ctx, root, 4242, time.Minute, nil)
	if err != context.DeadlineExceeded || s.Settled || s.Waited < time.Second {
		t.Errorf("interrupted: %+v, %v", s, err)
	}
}
