package facts

import (
	"fmt"
	"time"

	"github.com/perfdoctor/perfdoctor/evidence"
	"github.com/perfdoctor/perfdoctor/internal/human"
)

// RuntimeFigures are the collector and scheduler over the window, each from
// the best source present; zero means unknown.
type RuntimeFigures struct {
	GCCyclesPerSec          float64  `json:"gc_cycles_per_sec,omitempty"`
	GCPauseP99Ms            float64  `json:"gc_pause_p99_ms,omitempty"`      // stop-the-world, per pause
	GCPauseP99Over          string   `json:"gc_pause_p99_over,omitempty"`    // what the p99 is over: "the window (runtime/metrics)", "a 1s execution trace", "the gctrace log"
	GCPauseMaxMs            float64  `json:"gc_pause_max_ms,omitempty"`      // the window's longest pause (runtime statistics' pause history)
	GCPauses                int      `json:"gc_pauses,omitempty"`            // pauses in the window's history that GCPauseMaxMs is over
	GCCPUShare              float64  `json:"gc_cpu_share,omitempty"`         // of the CPU used, 0..1
	SchedLatencyP99Ms       float64  `json:"sched_latency_p99_ms,omitempty"` // runnable -> running
	GoroutinesCreatedPerSec float64  `json:"goroutines_created_per_sec,omitempty"`
	Sources                 []string `json:"sources"` // "execution trace", "runtime/metrics", "gctrace", "runtime statistics"
}

// Runtime is the collector and scheduler figures of the window, each from
// the best source present: the trace for the scheduler (it sees every
// transition), runtime/metrics for the whole window, then the MemStats
// samples and the gctrace log; nil when none gave any.
var Runtime = &Fact[*RuntimeFigures]{
	Name:    "runtime-figures",
	Doc:     "The window's GC cycles per second, GC pause p99 and maximum, GC share of CPU, runnable-to-running p99 and goroutines created per second, each from the best source present, with the sources named.",
	Compute: func(p *Pass) *RuntimeFigures { return runtimeFigures(p.Evidence) },
}

func runtimeFigures(ev *evidence.Evidence) *RuntimeFigures {
	var f RuntimeFigures
	used := map[string]bool{}
	set := func(dst *float64, v float64, src string) {
		if *dst == 0 && v > 0 {
			*dst = v
			used[src] = true
		}
	}
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	rw, haveRW := ev.Runtime()
	if haveRW && rw.Span > 0 {
		set(&f.GCCyclesPerSec, rw.GCCycles/rw.Span.Seconds(), "runtime/metrics")
		set(&f.GCCPUShare, rw.GCShare, "runtime/metrics")
	}
	if gc, ok := ev.GC(); ok && (ev.HasTrace() || haveRW || ev.GCTrace != nil) {
		set(&f.GCCyclesPerSec, gc.CyclesPerSec, "runtime statistics")
	}
	if ev.HasTrace() {
		if s, err := ev.Trace(); err == nil && s != nil {
			set(&f.SchedLatencyP99Ms, ms(s.SchedLatency.P99), "execution trace")
			set(&f.GoroutinesCreatedPerSec, s.Goroutines.CreatedPerSec, "execution trace")
			if s.Window > 0 {
				set(&f.GCCyclesPerSec, float64(s.GC.Cycles)/s.Window.Seconds(), "execution trace")
			}
		}
	}
	// Pauses: the whole window's distribution first, then the log's, and a
	// short trace's only without either; each says what it is over.
	pauseP99 := func(d time.Duration, src, over string) {
		if f.GCPauseP99Ms == 0 && d > 0 {
			set(&f.GCPauseP99Ms, ms(d), src)
			f.GCPauseP99Over = over
		}
	}
	if haveRW {
		pauseP99(rw.GCPauseP99, "runtime/metrics", "the window (runtime/metrics)")
	}
	if t := ev.GCTrace; t != nil {
		pauseP99(t.STW.P99, "gctrace", "the gctrace log")
	}
	if ev.HasTrace() {
		if s, err := ev.Trace(); err == nil && s != nil {
			pauseP99(s.GC.STW.P99, "execution trace", fmt.Sprintf("a %s execution trace", human.RoundDuration(s.Window)))
		}
	}
	if gc, ok := ev.GC(); ok && gc.PauseMax > 0 {
		set(&f.GCPauseMaxMs, ms(gc.PauseMax), "runtime statistics")
		f.GCPauses = gc.Pauses
	}
	if haveRW {
		set(&f.SchedLatencyP99Ms, ms(rw.SchedLatencyP99), "runtime/metrics")
		if rw.Span > 0 {
			set(&f.GoroutinesCreatedPerSec, rw.GoroutinesCreated/rw.Span.Seconds(), "runtime/metrics")
		}
	}
	if t := ev.GCTrace; t != nil {
		set(&f.GCCyclesPerSec, t.CyclesPerSec, "gctrace")
		set(&f.GCCPUShare, t.CPUShare, "gctrace")
	}
	if len(used) == 0 {
		return nil
	}
	for _, src := range []string{"execution trace", "runtime/metrics", "runtime statistics", "gctrace"} {
		if used[src] {
			f.Sources = append(f.Sources, src)
		}
	}
	return &f
}
