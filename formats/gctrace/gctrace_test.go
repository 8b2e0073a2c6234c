package gctrace

import (
	"errors"
	"os"
	"strings"
	"testing"
	"time"
)

const go126 = "gc 4 @1.562s 8%: 0.031+30+0.023 ms clock, 0.062+0.054/16/21+0.047 ms cpu, 27->29->18 MB, 32 MB goal, 0 MB stacks, 0 MB globals, 2 P"

func TestParseLineGo126(t *testing.T) {
	c, err := ParseLine(go126)
	if err != nil {
		t.Fatal(err)
	}
	if c.N != 4 || c.At != 1562*time.Millisecond || c.Share != 0.08 || c.Procs != 2 || c.Forced {
		t.Errorf("header: %+v", c)
	}
	if c.SweepTerm != 31*time.Microsecond || c.Mark != 30*time.Millisecond || c.MarkTerm != 23*time.Microsecond {
		t.Errorf("clock: %v %v %v", c.SweepTerm, c.Mark, c.MarkTerm)
	}
	if c.STW() != 54*time.Microsecond {
		t.Errorf("STW = %v", c.STW())
	}
	if c.CPUAssist != 54*time.Microsecond || c.CPUBackground != 16*time.Millisecond || c.CPUIdle != 21*time.Millisecond {
		t.Errorf("cpu: %+v", c)
	}
	if want := 62*time.Microsecond + 54*time.Microsecond + 16*time.Millisecond + 47*time.Microsecond; c.CPU() != want {
		t.Errorf("CPU = %v, want %v", c.CPU(), want)
	}
	if c.HeapStart != 27<<20 || c.HeapEnd != 29<<20 || c.HeapLive != 18<<20 || c.Goal != 32<<20 {
		t.Errorf("heap: %+v", c)
	}
}

func TestParseLineOlderFormatsAndNoise(t *testing.T) {
	for _, tc := range []struct {
		line   string
		n      int
		forced bool
	}{
		// Go 1.5-1.17: no stacks or globals
		{"gc 1 @0.012s 2%: 0.017+0.82+0.003 ms clock, 0.035+0.12/0.61/0.55+0.007 ms cpu, 4->4->0 MB, 5 MB goal, 4 P", 1, false},
		{"gc 12 @3.001s 1%: 0.02+1.1+0.01 ms clock, 0.08+0/1.0/2.1+0.04 ms cpu, 4->4->1 MB, 5 MB goal, 4 P (forced)", 12, true},
		// a log prefix, as a container runtime writes it
		{"2025-01-02T03:04:05Z stderr F gc 7 @9.5s 3%: 1+2+3 ms clock, 1+2/3/4+5 ms cpu, 10->11->5 MB, 12 MB goal, 0 MB stacks, 0 MB globals, 8 P", 7, false},
	} {
		c, err := ParseLine(tc.line)
		if err != nil {
			t.Errorf("%q: %v", tc.line, err)
			continue
		}
		if c.N != tc.n || c.Forced != tc.forced {
			t.Errorf("%q: got N=%d forced=%v", tc.line, c.N, c.Forced)
		}
	}
	for _, line := range []string{"", "hello", "scvg: 0 MB released", "gc is fun @home", "the gc 5 @"} {
		if _, err := ParseLine(line); !errors.Is(err, ErrNotCycle) && err == nil {
			t.Errorf("%q parsed as a cycle", line)
		}
	}
	if _, err := ParseLine("gc 5 @1.0s 3%: garbage"); err == nil || errors.Is(err, ErrNotCycle) {
		t.Errorf("malformed line: err = %v", err)
	}
}

// TestRealD1Bad reads gctrace output captured from the casebook D1 bad
// variant (GODEBUG=gctrace=1, 4 s of closed-loop load on 2 cores).
func TestRealD1Bad(t *testing.T) {
	f, err := os.Open("testdata/d1-bad.log")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s, err := Summarize(f)
	if err != nil {
		t.Fatal(err)
	}
	if s.Cycles != 63 || s.Malformed != 0 || s.Restarts != 0 {
		t.Fatalf("cycles %d malformed %d restarts %d", s.Cycles, s.Malformed, s.Restarts)
	}
	if s.Procs != 2 {
		t.Errorf("Procs = %d", s.Procs)
	}
	// D1 bad collects many times a second under load with a ~20 MB live heap.
	if s.CyclesPerSec < 5 {
		t.Errorf("CyclesPerSec = %.1f, want >= 5", s.CyclesPerSec)
	}
	if s.HeapLiveMax < 10<<20 || s.HeapLiveMax > 100<<20 {
		t.Errorf("HeapLiveMax = %d MB", s.HeapLiveMax>>20)
	}
	if s.CPUShare <= 0.02 || s.CPUShare > 1 {
		t.Errorf("CPUShare = %.3f", s.CPUShare)
	}
	if s.CumulativeShare != 0.11 {
		t.Errorf("CumulativeShare = %v, want the last line's 11%%", s.CumulativeShare)
	}
	if s.STW.Count != 63 || s.STW.Max <= 0 || s.STW.P99 > s.STW.Max || s.STW.P50 > s.STW.P99 {
		t.Errorf("STW = %+v", s.STW)
	}
	t.Logf("%.1f cycles/s, GC CPU %.1f%% (cumulative %.0f%%), STW p50 %v p99 %v max %v, live %d-%d MB, goal %d MB",
		s.CyclesPerSec, s.CPUShare*100, s.CumulativeShare*100, s.STW.P50, s.STW.P99, s.STW.Max, s.HeapLiveMin>>20, s.HeapLiveMax>>20, s.Goal>>20)
}

func TestSummarizeRestartAndEmpty(t *testing.T) {
	log := strings.Join([]string{
		"gc 1 @0.1s 1%: 1+1+1 ms clock, 1+1/1/1+1 ms cpu, 4->4->2 MB, 5 MB goal, 2 P",
		"gc 2 @0.2s 1%: 1+1+1 ms clock, 1+1/1/1+1 ms cpu, 4->4->2 MB, 5 MB goal, 2 P",
		"program output",
		"gc 1 @0.05s 0%: 1+1+1 ms clock, 1+1/1/1+1 ms cpu, 4->4->2 MB, 5 MB goal, 4 P",
		"gc 2 @1.05s 0%: 1+1+1 ms clock, 1+1/1/1+1 ms cpu, 4->4->2 MB, 5 MB goal, 4 P",
		"gc 3 @2.05s 0%: 1+1+1 ms clock, 1+1/1/1+1 ms cpu, 4->4->2 MB, 5 MB goal, 4 P",
	}, "\n")
	s, err := Summarize(strings.NewReader(log))
	if err != nil {
		t.Fatal(err)
	}
	if s.Restarts != 1 || s.Cycles != 3 || s.Procs != 4 || s.CyclesPerSec < 0.999 || s.CyclesPerSec > 1.001 {
		t.Errorf("%+v", s)
	}
	// 2 cycles × 4 ms CPU (idle excluded) over 2 s × 4 P
	if want := 0.008 / 8; s.CPUShare < want*0.99 || s.CPUShare > want*1.01 {
		t.Errorf("CPUShare = %v, want %v", s.CPUShare, want)
	}
	if _, err := Summarize(strings.NewReader("nothing here\n")); !errors.Is(err, ErrNoCycles) {
		t.Errorf("err = %v", err)
	}
}
