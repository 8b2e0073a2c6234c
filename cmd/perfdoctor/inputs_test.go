package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	rtrace "runtime/trace"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestExportCommand(t *testing.T) {
	out := filepath.Join(t.TempDir(), "cpu.folded")
	code, _, stderr := perfdoctor(t, "export", "../../formats/jfr/testdata/jdk25.jfr", "-o", out)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	data, err := os.ReadFile(out)
	if err != nil || !strings.Contains(string(data), "Workload.main;Workload.spin ") {
		t.Errorf("folded export: %v\n%.300s", err, data)
	}
	code, stdout, _ := perfdoctor(t, "export", "../../formats/perfscript/testdata/multi-event.txt", "--kind", "perf", "-f", "speedscope")
	if code != 0 || !strings.Contains(stdout, `"type":"sampled"`) {
		t.Errorf("speedscope export: exit %d, %.200s", code, stdout)
	}
	code, _, stderr = perfdoctor(t, "export", "../../formats/jfr/testdata/jdk25.jfr", "--kind", "heap")
	wantOneLineError(t, code, stderr, "no heap profile in the input (it has: ")
	code, _, stderr = perfdoctor(t, "export", "../../formats/jfr/testdata/ap-wall.jfr", "-f", "svg")
	wantOneLineError(t, code, stderr, "unknown --format")
}

// Too little data is said plainly, with what to do; a guess about folded
// counts is shown, and the flag overrides it.
func TestDiagnoseSaysWhatItAssumed(t *testing.T) {
	dir := t.TempDir()
	few := filepath.Join(dir, "few.folded")
	os.WriteFile(few, []byte("main;work 3\nmain;idle 1\n"), 0o644)
	code, stdout, stderr := perfdoctor(t, "diagnose", few)
	if code != 0 || !strings.Contains(stdout, "warning: the CPU profile holds only 4 samples") || !strings.Contains(stdout, "--duration") {
		t.Errorf("few samples: exit %d\n%s%s", code, stdout, stderr)
	}
	periods := filepath.Join(dir, "total.folded")
	os.WriteFile(periods, []byte("main;a 30000000\nmain;b 10000000\nmain;c 1200000000\n"), 0o644)
	_, stdout, _ = perfdoctor(t, "diagnose", periods, "-f", "json")
	if !strings.Contains(stdout, `"caveats"`) || !strings.Contains(stdout, "counts read as nanoseconds") || !strings.Contains(stdout, `"cpu_samples": 124`) {
		t.Errorf("period-weighted folded file:\n%.2000s", stdout)
	}
	_, stdout, _ = perfdoctor(t, "diagnose", periods, "--folded-weights", "samples", "-f", "json")
	if strings.Contains(stdout, "counts read as nanoseconds") || !strings.Contains(stdout, `"cpu_samples": 1240000000`) {
		t.Errorf("--folded-weights=samples not obeyed:\n%.2000s", stdout)
	}
	code, _, stderr = perfdoctor(t, "diagnose", periods, "--folded-weights", "bytes")
	wantOneLineError(t, code, stderr, "--folded-weights")
}

// --perf-event picks the event of a multi-event perf script file; a name
// the file lacks is a one-line error listing the events it has.
func TestDiagnosePerfEvent(t *testing.T) {
	const multi = "../../formats/perfscript/testdata/multi-event.txt"
	code, stdout, stderr := perfdoctor(t, "export", multi, "--kind", "perf", "--perf-event", "task-clock:u")
	if code != 0 || strings.Count(stdout, "\n") == 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var n int
	for _, l := range strings.Split(strings.TrimSpace(stdout), "\n") {
		var c int
		fmt.Sscan(l[strings.LastIndexByte(l, ' ')+1:], &c)
		n += c
	}
	if n != 40 {
		t.Errorf("task-clock:u exported with %d samples, want 40", n)
	}
	code, _, stderr = perfdoctor(t, "diagnose", multi, "--perf-event", "cycles")
	wantOneLineError(t, code, stderr, `perf event "cycles" is not in this file; it has page-faults (12 samples), cpu-clock (60 samples), task-clock:u (40 samples)`)
}

// A trace cut short is diagnosed from what it holds, and the report says
// it was read in part.
func TestDiagnoseTruncatedTrace(t *testing.T) {
	var buf bytes.Buffer
	if err := rtrace.Start(&buf); err != nil {
		t.Fatal(err)
	}
	// Over a second, so the runtime starts a second generation: a cut in
	// the last one leaves the first whole.
	for end := time.Now().Add(1300 * time.Millisecond); time.Now().Before(end); {
		var wg sync.WaitGroup
		for range 20 {
			wg.Go(func() { time.Sleep(time.Millisecond) })
		}
		wg.Wait()
	}
	rtrace.Stop()
	path := filepath.Join(t.TempDir(), "trace.out")
	os.WriteFile(path, buf.Bytes()[:buf.Len()-1], 0o644)
	code, stdout, stderr := perfdoctor(t, "diagnose", path)
	if code != 0 || !strings.Contains(stdout, "partial input: "+path+": execution trace cut short") {
		t.Errorf("exit %d\n%s%s", code, stdout, stderr)
	}
}
