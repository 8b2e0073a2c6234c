package rules

import (
	"fmt"
	"slices"

	"github.com/perfdoctor/perfdoctor/evidence"
	"github.com/perfdoctor/perfdoctor/facts/frames"
	"github.com/perfdoctor/perfdoctor/internal/human"
)

// Overhead is the CPU no request asks for by name but every request's work
// drives: the Go collector and scheduler and a JVM's collector threads.
// Compilation (a JIT) is not in it: it follows new code, not more work. Nor
// are the kernel's context-switch frames (finish_task_switch and the
// interrupt returns): perf charges them the samples that arrived while
// interrupts were off, which on the corpus's proxies (nginx, HAProxy: 19%
// of samples) did not fall with the connections the fix removed.
var Overhead = evidence.Any(frames.GCFrames, frames.SchedulerFrames, frames.JVMGCFrames)

// minDrag is the unowned overhead below which nothing is added: under 1% of
// CPU the figure is noise.
const minDrag = 0.01

// dragOverhead adds to each CPU cause what its work drags with it: the
// overhead samples no finding owns (a GC finding, a scheduler finding own
// theirs and are counted as symptoms where they are linked) go in
// proportion to the work that drives them, so a cause owning f of the CPU
// is estimated to remove f/(1 − O) of it, O being that overhead; its range
// runs from what its frames show (none of the overhead is its) to all of
// the overhead besides. The proportion keeps the order of the CPU findings.
//
// Measured (casebook calibration, CPU per request): the fixes removed more
// than their frames showed in 13 of 14 CPU cases, by 5 to 36 points, the
// garbage the removed code made and the scheduling its goroutines caused
// going with it (C4's formatting: 37% seen, 60% removed; B1's goroutines:
// 27% seen, 62% removed).
func dragOverhead(st *evidence.Stacks, fs []Finding) {
	if st == nil || st.Total <= 0 {
		return
	}
	var claims []func(evidence.Sample) bool
	for _, f := range fs {
		if f.Claim != nil && f.Claim.CPU != nil {
			claims = append(claims, f.Claim.CPU)
		}
	}
	overhead := st.Has(Overhead)
	var unowned int64
	for _, s := range st.Samples {
		if overhead(s) && !slices.ContainsFunc(claims, func(c func(evidence.Sample) bool) bool { return c(s) }) {
			unowned += s.Value
		}
	}
	o := float64(unowned) / float64(st.Total)
	if o < minDrag {
		return
	}
	for i := range fs {
		f := &fs[i]
		if f.Resource != "cpu" || f.CausedBy != "" || f.Growing || f.OverheadCounted || f.Claim == nil || f.Claim.CPU == nil || f.Impact <= 0 {
			continue
		}
		lo, hi := f.Impact, f.Impact
		if r := f.ImpactRange; r != nil {
			lo, hi = r[0], r[1]
		}
		f.Impact = min(f.Impact/(1-o), maxShare)
		f.ImpactRange = &[2]float64{min(lo, f.Impact), min(max(hi+o, f.Impact), maxShare)}
		f.ImpactBasis += fmt.Sprintf("; with what the work drags: the collector's and scheduler's CPU no finding owns (%s of CPU) "+
			"in proportion to its share, none of it at the low end, all of it at the high", human.Percent(o))
	}
}

// maxShare keeps a share removed below all of the CPU.
const maxShare = 0.999
