// Package gc001 detects garbage-collector CPU driven by the allocation
// rate (finding class gc-pressure).
package gc001

import (
	"fmt"
	"math"
	"strings"

	"github.com/perfdoctor/perfdoctor/facts"

	"github.com/perfdoctor/perfdoctor/evidence"
	"github.com/perfdoctor/perfdoctor/facts/frames"
	"github.com/perfdoctor/perfdoctor/internal/human"
	"github.com/perfdoctor/perfdoctor/rules"
	"github.com/perfdoctor/perfdoctor/rules/goruntime"
)

// Rule is GC001.
var Rule = &rules.Rule{
	ID:    "GC001",
	Class: "gc-pressure",
	Doc: rules.Doc{
		Title: "The garbage collector takes a large share of CPU",
		Text: `Every allocation brings the next GC cycle closer. When a service allocates
fast and its GOGC leaves little headroom over a small live heap, the collector
runs several times a second and its mark and sweep work, plus the assists it
charges to allocating goroutines, take CPU away from requests.`,
		Evidence: `CPU share of samples with a GC frame on the stack (runtime.gcBgMarkWorker,
gcAssistAlloc, gcDrain, bgsweep/sweepone, scanobject or Go 1.26's scanObject and
scanSpan, markroot, write-barrier flushes); allocation share (runtime.mallocgc);
GC cycles per second, pauses and allocation rate from two runtime statistics
samples; live heap from the heap profile against the memory limit; the top
alloc_objects sites. When the target serves runtime/metrics, the GC share is
the runtime's own accounting over the window and the live heap
/gc/heap/live:bytes; a gctrace log adds cycle rate and pauses. Reports from 5%
GC share: low, 25% medium, 30% high (healthy net/http services here measured
up to 21%: casebook R6, a tiny heap collected ~150 times a second at the
runtime's 4 MB minimum heap target, reads 9-21% from run to run). A window whose GC cost is set by the
live heap's scan instead (at most 5 cycles/s over at least 1M live objects,
scanning at least half the GC's CPU) is GC002's, so one cost is one finding.`,
		Fix: `First cut allocations at the top alloc_objects sites: GC cost follows the
number of objects, not their bytes. Then give the collector headroom: set
GOMEMLIMIT to the memory you can spend on the heap and raise GOGC (or GOGC=off
with GOMEMLIMIT), which replaces the memory-ballast trick since Go 1.19. The
peak heap grows to about live × (1 + GOGC/100), so state and check that cost.`,
		Before: `GOGC=100 ./service                       # GC several times a second`,
		After:  `GOMEMLIMIT=1800MiB GOGC=400 ./service     # fewer cycles, heap capped`,
		Caveats: `Pooling buffers (sync.Pool of bytes.Buffer) rarely helps: it cuts bytes,
not objects. Without GOMEMLIMIT a high GOGC can run a growing heap out of memory.`,
		Since: "0.1",
		Refs:  []string{"https://go.dev/doc/gc-guide"},
	},
	Needs: []rules.Input{rules.CPU},
	Uses:  []rules.Input{rules.Allocs, rules.Heap, rules.Metrics, rules.System},
	Facts: []facts.Key{facts.CPUStacks, facts.GCCost, facts.WindowAllocs},
	Check: check,
}

const (
	// fewSamples is 10 s of one core at 100 Hz: below it a window's GC
	// share is held to the runtime's own accounting.
	fewSamples = 1000
	lowShare   = 0.05
	// Healthy services on two cores measured 5-9% (fixed variants) and up
	// to 21% with a tiny heap at ~150 cycles/s (R6): medium is above that.
	mediumShare = 0.25
	highShare   = 0.30
)

func check(pass *rules.Pass) error {
	ev := pass.Evidence
	if !pass.EnoughCPU() {
		return nil
	}
	cpu := facts.Get(pass.Facts, facts.CPUStacks)
	profShare := cpu.Share(frames.GCFrames)
	basis := "share of CPU samples with a GC frame on the stack; cutting allocations and giving the GC headroom together can recover most of it"
	// The runtime's own CPU accounting, when the target serves
	// runtime/metrics, is exact over the window where samples estimate.
	gcShare, exact := goruntime.GCShare(ev, cpu)
	rw, _ := ev.Runtime()
	if exact {
		basis = "GC share of the CPU the process used over the window, from runtime/metrics (/cpu/classes/gc/total over /cpu/classes/total minus idle); cutting allocations and giving the GC headroom together can recover most of it"
	}
	if gcShare < lowShare {
		return nil
	}
	scan := facts.Get(pass.Facts, facts.GCCost)
	scanBound := scan.HeapScanBound
	if scanBound {
		return nil // few, expensive cycles over a large live heap: GC002 reports this cost
	}
	mallocOnly := scan.Malloc

	// A quiet window's share rests on few samples: where the runtime's
	// own accounting since start disagrees by more than threefold, the
	// window's share is reported as what it is, not as the service's GC cost.
	samples := evidence.SampleCount(ev.Profile(evidence.CPU))
	var quiet string
	if m := ev.MetricsEnd; !exact && samples < fewSamples && m != nil && m.GCCPUFraction > 0 && gcShare > 3*m.GCCPUFraction {
		quiet = fmt.Sprintf(" in %d CPU samples, where the runtime's own GC CPU fraction since start is %s: too quiet a window to judge the service by",
			samples, human.Percent(m.GCCPUFraction))
	}
	f := rules.Finding{
		Severity:    grade(gcShare),
		Impact:      gcShare,
		Resource:    "cpu",
		ImpactBasis: basis,
		Evidence: []rules.Fact{
			rules.Share("GC share of CPU", gcShare),
			rules.Share("allocation share of CPU (outside GC)", mallocOnly),
		},
		Frames: cpu.Matched(frames.GCFrames, 12),
	}
	if exact {
		f.Evidence = append(f.Evidence,
			rules.Share("GC share of CPU samples (profile; includes sweeping)", profShare),
			rules.Share("mark-assist share of CPU (runtime/metrics)", rw.AssistShare))
	}
	gc, haveGC := ev.GC()
	if haveGC {
		f.Evidence = append(f.Evidence,
			rules.Count("GC cycles per second", round(gc.CyclesPerSec, 2), "/s"),
			rules.Count("GC pause time in window", round(gc.PauseTotal.Seconds()*1000, 2), "ms"),
			rate(rules.Bytes("allocation rate", uint64(gc.AllocBytesSec))),
			rules.Count("objects allocated", math.Round(gc.AllocObjsSec), "/s"),
		)
	}
	if t := ev.GCTrace; t != nil && !haveGC && t.CyclesPerSec > 0 {
		f.Evidence = append(f.Evidence,
			rules.Count("GC cycles per second (gctrace)", round(t.CyclesPerSec, 2), "/s"),
			rules.Count("GC stop-the-world p99 (gctrace)", round(t.STW.P99.Seconds()*1000, 3), "ms"))
		haveGC, gc.CyclesPerSec = true, t.CyclesPerSec
	}
	if m := ev.MetricsEnd; m != nil && m.GCCPUFraction > 0 {
		f.Evidence = append(f.Evidence, rules.Share("GC CPU fraction since process start (runtime)", m.GCCPUFraction))
	}

	sites, sinceStart := allocSites(facts.Get(pass.Facts, facts.WindowAllocs))
	f.Locations = rules.Locations(sites, "allocation site (share of objects allocated)")

	settings := ev.Settings()
	live := goruntime.LiveHeap(ev)
	if live > 0 {
		f.Evidence = append(f.Evidence, rules.Bytes("live heap", live))
	}
	advice := goruntime.Headroom(settings, live, gcShare)
	for _, fact := range advice.Facts {
		f.Evidence = append(f.Evidence, fact)
	}

	rate := ""
	if haveGC {
		rate = fmt.Sprintf(", %.1f GC cycles/s", gc.CyclesPerSec)
	}
	f.Summary = fmt.Sprintf("The garbage collector uses %s of CPU%s", human.Percent(gcShare), rate)
	if quiet != "" {
		f.Summary = fmt.Sprintf("The garbage collector took %s of CPU%s", human.Percent(gcShare), quiet)
		f.Severity = min(f.Severity, rules.Low)
		f.ImpactBasis += "; at most low: " + strings.TrimPrefix(quiet, " ")
	}
	if len(sites) > 0 {
		f.Summary += fmt.Sprintf("; top allocation site %s", rules.ShortFunc(sites[0].Func))
	}

	var fix strings.Builder
	if len(sites) > 0 {
		fmt.Fprintf(&fix, "Cut allocations at the top alloc_objects sites first (GC work follows object counts): %s. ", rules.SiteList(sites, 3))
	} else {
		fix.WriteString("Cut allocations on the hot path first (collect an allocs profile to name the sites; GC work follows object counts). ")
	}
	fix.WriteString(advice.Text)
	f.Fix = fix.String()
	f.Example = advice.Example
	f.Config = advice.Config
	f.Caveats = append(f.Caveats, "A sync.Pool of buffers rarely helps: it saves bytes, not objects (cases B6, C5).")
	if scan.LiveObjects >= facts.MinLiveObjects && scan.Scan >= facts.MinScanOfGC*scan.GC {
		f.Caveats = append(f.Caveats, fmt.Sprintf("Each cycle scans %s live objects (%s of CPU in heap scanning): a pointer-free layout for long-lived data (see GC002) would make every cycle cheaper too.",
			human.Number(float64(scan.LiveObjects)), human.Percent(scan.Scan)))
	}
	if !pass.Has(rules.Allocs) {
		f.Caveats = append(f.Caveats, "No allocs profile: the allocation sites are not named.")
	} else if sinceStart {
		f.Caveats = append(f.Caveats, "No heap profile at the start of the window: the allocation sites are counted since the process started, startup included.")
	}
	if !haveGC {
		f.Caveats = append(f.Caveats, "No runtime statistics at both ends of the window: GC cycle rate unknown.")
	}
	f.Caveats = append(f.Caveats, advice.Caveats...)
	f.Claim = &rules.Claim{Level: rules.LevelRuntime, CPU: cpu.Has(frames.GCFrames), AllocDriven: true}
	pass.Report(f)
	return nil
}

func rate(f rules.Fact) rules.Fact {
	f.Value += "/s"
	f.Unit += "/s"
	return f
}

func grade(share float64) rules.Severity {
	switch {
	case share >= highShare:
		return rules.High
	case share >= mediumShare:
		return rules.Medium
	}
	return rules.Low
}

// allocSites names where objects are allocated during the window: the first
// frame above the runtime (application or library), by object count. It
// reports whether the counts run since process start instead.
func allocSites(window facts.Allocations) (sites []evidence.Site, sinceStart bool) {
	p, inWindow := window.Profile, window.InWindow
	st := evidence.NewStacks(p, "alloc_objects")
	return st.TopSites(5, st.First(func(fn string) bool { return !evidence.IsRuntime(fn) })), p != nil && !inWindow
}

func round(v float64, digits int) float64 {
	p := math.Pow(10, float64(digits))
	return math.Round(v*p) / p
}
