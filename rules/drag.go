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

// unseenHigh bounds what a fix removes beyond the frames a rule reads, for
// a finding that states no range of its own: the garbage the removed code
// made, the scheduling and hand-offs it caused, a peer's share on the same
// machine. On the measured interventions (CPU per request, bad against
// fixed) the fix removed 0.98 to 2.2 times the share the finding's frames
// held: casebook A1 1.8, A2 1.1, A3 1.1, A4 1.3, B1 2.2, B4 1.2, B5 1.35,
// C1 1.3, C3 1.2, C4 1.6, D1 0.98, D3 1.2, R1 1.5, R4 1.35; corpus Caddy's
// gzip 1.0, VictoriaMetrics' cache 1.05, GOGC=20 1.5, Spring's DEBUG
// logging 2.2. The ratios are of what the fix removed to the share the
// finding's frames and its symptoms' held (casebook C3: 94% removed of 71%
// and its symptoms' 8%). The range states that spread. The estimate is the
// median ratio, 1.3 (of the eighteen, and of the thirteen whose findings
// state no range of their own: 0.98, 1.1, 1.1, 1.2, 1.2, 1.2, 1.3, 1.35,
// 1.35, 1.5, 1.6, 1.8, 2.2), or the drag's where the collector and
// scheduler time it carries says more: the frames' share alone was low on
// 16 of the 18, and the casebook's estimates were low by a median of +0.31
// in log (CPU per request). maxUnseen keeps both below all of the CPU.
const (
	unseenEstimate = 1.3
	unseenHigh     = 2.2
	maxUnseen      = 0.95
)

// dragOverhead adds to each CPU cause what its work drags with it. The
// overhead samples no finding owns (a GC finding, a scheduler finding own
// theirs and are counted as symptoms where they are linked) go in
// proportion to the work that drives them, so a cause owning f of the CPU
// is estimated to remove f/(1 − O) of it, O being that overhead; the
// proportion keeps the order of the CPU findings. Its range runs from what
// its frames show (none of the overhead is its) to all of the overhead
// besides, and, where the rule states no range, to unseenHigh times the
// frames' share (what the frames cannot show), its estimate at least
// unseenEstimate times it.
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
	for i := range fs {
		f := &fs[i]
		lo, hi := f.Impact, f.Impact
		stated := f.ImpactRange != nil
		if stated {
			lo, hi = f.ImpactRange[0], f.ImpactRange[1]
		}
		// Only a share read from the samples the finding owns (its
		// estimate, or the floor of a range it states): one read from
		// other evidence (NET003's kernel share from /proc) or scaled by
		// the rule's own model has its own basis.
		if f.Resource != "cpu" || f.CausedBy != "" || f.Growing || f.Claim == nil || f.Claim.CPU == nil || f.Impact <= 0 ||
			f.Cost == nil || f.Cost.CPUClaimed <= 0 || min(lo, f.Impact) > 1.05*f.Cost.CPUOwned+0.005 {
			continue
		}
		// The program's work and its configuration drive the collector
		// and the scheduler; the kernel's work and the runtime's own do
		// not add to them.
		if o >= minDrag && !f.OverheadCounted && f.Claim.Level >= LevelCode {
			f.Impact = min(f.Impact/(1-o), maxShare)
			hi += o
			f.ImpactBasis += fmt.Sprintf("; with what the work drags: the collector's and scheduler's CPU no finding owns (%s of CPU) "+
				"in proportion to its share, none of it at the low end, all of it at the high", human.Percent(o))
		}
		if !stated {
			// The fix is estimated at the median ratio of its estimate
			// and its symptoms' share, the symptoms keeping what they
			// own.
			e := explainedCPU(fs, *f)
			f.Impact = max(f.Impact, Estimated(lo+e)-e)
			hi = max(hi, min(lo*unseenHigh, maxUnseen))
			f.ImpactBasis += fmt.Sprintf("; the estimate is at least %.1f times the share its frames (and its symptoms) hold, the median of what measured fixes removed beyond them, and the range's top %.1f times, the most", unseenEstimate, unseenHigh)
		}
		if f.Claim.Regrade != nil && !f.atMostLow {
			f.Severity = max(f.Severity, f.Claim.Regrade(f.Impact))
		}
		if hi-lo < 0.001 {
			continue
		}
		f.ImpactRange = &[2]float64{min(lo, f.Impact), min(max(hi, f.Impact), maxShare)}
	}
}

// Estimated is what a fix is estimated to remove when its finding states
// no range of its own, from the share its rule reads (with its symptoms'):
// the median ratio measured fixes removed to it, at most maxUnseen.
func Estimated(share float64) float64 {
	return min(share*unseenEstimate, maxUnseen)
}

// explainedCPU is the CPU the symptoms of cause own: what its fix removes
// besides its own share (Gain). A symptom is linked either way: its
// CausedBy, or the cause's Explains (which Rank fills). What a symptom owns
// of the CPU samples is disjoint from the cause's; an impact read from
// other evidence (/proc times) may overlap the cause's share, so it counts
// up to what the symptom owns.
func explainedCPU(fs []Finding, cause Finding) float64 {
	var e float64
	for _, g := range fs {
		if (g.CausedBy == cause.ID || slices.Contains(cause.Explains, g.ID)) && g.Resource == "cpu" {
			v := g.Impact
			if g.Cost != nil && g.Cost.CPUClaimed > 0 {
				v = min(v, g.Cost.CPUOwned)
			}
			e += v
		}
	}
	return e
}

// maxShare keeps a share removed below all of the CPU.
const maxShare = 0.999

// Midway is the estimate of what a fix removes when it removes at least
// low, at most high, and the evidence cannot place it between them: the
// range's top adds parts of which the frames cannot say how much goes with
// the fix (the collector's share, the JIT compilers', the rest of a pass or
// of query execution), and counting none of them, the range's floor, was
// low on every measured intervention whose finding stated such a range:
// GOGC=20 1.66x measured against its floor's 1.37x (range top 1.68x),
// Spring Boot's DEBUG level 1.74x against 1.25x (top 1.94x), PostgreSQL's
// missing index 49.7x against 26.5x (top 52.9x), the Pushgateway's
// consistency check 167x against 37.4x (top 46.7x), VictoriaMetrics'
// disabled cache 5.32x against 4.93x (top 5.54x). Half of what the evidence
// cannot place is the estimate that errs least at either end.
func Midway(low, high float64) float64 {
	return low + (max(high, low)-low)/2
}
