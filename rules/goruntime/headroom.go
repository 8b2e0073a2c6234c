// Package goruntime is the Go runtime's tuning advice shared by the rules
// that prescribe it: the GOGC/GOMEMLIMIT headroom for a live heap and a GC
// share, so that GC001, GC002 and GC003 give the same numbers. What the
// runtime's frames mean lives in facts/frames, what its costs are in facts.
package goruntime

import (
	"fmt"
	"math"

	"github.com/perfdoctor/perfdoctor/internal/human"

	"github.com/perfdoctor/perfdoctor/evidence"
	"github.com/perfdoctor/perfdoctor/facts/frames"
	"github.com/perfdoctor/perfdoctor/rules"
)

// Advice is the GOGC/GOMEMLIMIT prescription for a live heap and a GC
// share: the text, a config example, the facts behind it and caveats.
type Advice struct {
	Text, Example string
	Facts         []rules.Fact
	Caveats       []string
	// Config is GOMEMLIMIT and GOGC as settings perfdoctor try can apply,
	// with the GC share they save; nil when nothing is proposed.
	Config *rules.ConfigFix
}

// Headroom proposes GOMEMLIMIT and GOGC from the live heap and the memory
// available, and estimates the GC CPU it saves: with the mark cost per cycle
// roughly fixed by the live heap, GC CPU scales with the number of cycles,
// which is proportional to 1/(1 + GOGC/100).
func Headroom(s evidence.Settings, live uint64, gcShare float64) Advice {
	var a Advice
	gogc := s.GOGC
	if gogc == 0 {
		gogc = 100
		a.Caveats = append(a.Caveats, "GOGC of the target unknown; assumed the default 100.")
	}
	if gogc < 0 {
		a.Text = "GOGC is already off: the GC runs only at the memory limit, so the heap is at the limit; cutting allocations or raising GOMEMLIMIT is what remains."
		return a
	}
	limit, limitSrc := s.MemoryLimit, "container memory limit"
	if s.GOMEMLIMIT > 0 && (limit == 0 || s.GOMEMLIMIT < limit) {
		limit, limitSrc = s.GOMEMLIMIT, "GOMEMLIMIT"
	}
	if limit == 0 && s.MemTotal > 0 && live > 0 {
		// No limit to fill: propose a modest one rather than half the machine.
		peak := uint64(float64(live) * (1 + float64(gogc)/100))
		limit = min(s.MemTotal/2, max(1<<30, 10*peak))
		limitSrc = "a default of max(1 GiB, 10x peak heap), as no memory limit is set"
	}
	if live == 0 || limit == 0 {
		a.Text = "Then give the GC headroom: set GOMEMLIMIT to ~90% of the memory the service may use and raise GOGC (e.g. 400) or set GOGC=off with GOMEMLIMIT; the peak heap grows to about live × (1 + GOGC/100)."
		a.Example = "GOMEMLIMIT=<90% of the container limit> GOGC=400"
		return a
	}
	budget := uint64(float64(limit) * 0.9)
	proposed := int(math.Floor((float64(budget)/float64(live)-1)*100/100)) * 100
	proposed = min(proposed, 2000)
	fact := rules.Bytes("heap budget", budget)
	fact.Value += " (90% of " + limitSrc + ")"
	a.Facts = append(a.Facts, fact)
	if proposed <= gogc {
		a.Text = fmt.Sprintf("The live heap (%s) leaves no room to raise GOGC within %s: cut allocations, or give the service more memory.", human.Bytes(live), human.Bytes(budget))
		return a
	}
	after := gcShare * float64(100+gogc) / float64(100+proposed)
	peakNow := uint64(float64(live) * (1 + float64(gogc)/100))
	peakAfter := uint64(float64(live) * (1 + float64(proposed)/100))
	a.Facts = append(a.Facts,
		rules.Count("proposed GOGC", float64(proposed), ""),
		rules.Share("expected GC share of CPU at the proposed GOGC", after),
	)
	a.Text = fmt.Sprintf("Then give the GC headroom: GOMEMLIMIT=%s and GOGC=%d (now %d). Expected GC CPU about %s instead of %s; memory cost: peak heap from ~%s to ~%s, capped by GOMEMLIMIT.",
		GoMemLimit(budget), proposed, gogc, human.Percent(after), human.Percent(gcShare), human.Bytes(peakNow), human.Bytes(peakAfter))
	a.Config = &rules.ConfigFix{Gain: gcShare - after, Changes: []rules.ConfigChange{
		{Kind: rules.ConfigEnv, Name: "GOMEMLIMIT", Value: GoMemLimit(budget), Now: nowMemLimit(s.GOMEMLIMIT)},
		{Kind: rules.ConfigEnv, Name: "GOGC", Value: fmt.Sprint(proposed), Now: fmt.Sprint(gogc)},
	}}
	a.Example = fmt.Sprintf("GOMEMLIMIT=%s GOGC=%d   # or in code: debug.SetMemoryLimit(%d); debug.SetGCPercent(%d)", GoMemLimit(budget), proposed, budget, proposed)
	return a
}

// nowMemLimit is the current GOMEMLIMIT for a ConfigChange: empty when unset.
func nowMemLimit(b uint64) string {
	if b == 0 {
		return ""
	}
	return GoMemLimit(b)
}

// GoMemLimit formats bytes in the GOMEMLIMIT syntax.
func GoMemLimit(b uint64) string { return fmt.Sprintf("%dMiB", max(b>>20, 1)) }

// LiveHeap estimates the live heap: the heap profile's in-use bytes are as
// of the last GC, which is what survives; else HeapAlloc at the end.
func LiveHeap(ev *evidence.Evidence) uint64 {
	if rw, ok := ev.Runtime(); ok && rw.Has(evidence.MetricHeapLive) && rw.HeapLive > 0 {
		return rw.HeapLive // marked at the last GC, exact
	}
	if st := evidence.NewStacks(ev.Profile(evidence.Heap), "inuse_space"); st != nil && st.Total > 0 {
		return uint64(st.Total)
	}
	if m := ev.MetricsEnd; m != nil {
		return m.HeapAlloc
	}
	return 0
}

// GCShare is the collector's share of the process's CPU over the window:
// the runtime's own accounting when the target serves runtime/metrics
// (exact), else the share of CPU samples with a GC frame on the stack.
func GCShare(ev *evidence.Evidence, cpu *evidence.Stacks) (share float64, exact bool) {
	if rw, ok := ev.Runtime(); ok && rw.Has(evidence.MetricGCCPU) && rw.Has(evidence.MetricTotalCPU) && rw.GCShare > 0 {
		return rw.GCShare, true
	}
	return cpu.Share(frames.GCFrames), false
}
