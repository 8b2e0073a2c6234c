// Package gc003 judges GC pressure from the collector's own log
// (GODEBUG=gctrace=1) when no CPU profile is at hand: the way engineers read
// gctrace by hand (finding class gc-pressure).
//
// It does not duplicate GC001: with a CPU profile present GC001 judges GC
// pressure (and shows the gctrace's cycle rate and pauses), and this rule
// stays silent.
package gc003

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/perfdoctor/perfdoctor/facts"
	"github.com/perfdoctor/perfdoctor/facts/frames"

	"github.com/perfdoctor/perfdoctor/internal/human"
	"github.com/perfdoctor/perfdoctor/rules"
	"github.com/perfdoctor/perfdoctor/rules/goruntime"
)

// Rule is GC003.
var Rule = &rules.Rule{
	ID:    "GC003",
	Class: "gc-pressure",
	Doc: rules.Doc{
		Title: "The GC log shows the collector taking a large share of CPU",
		Text: `A service run with GODEBUG=gctrace=1 writes one line per GC cycle to stderr:
when it ran, how long it stopped the world, the CPU its phases took, the heap
before and after and the goal. Many cycles a second over a small live heap,
each costing milliseconds of CPU per core, is the allocation-driven GC
pressure GC001 finds in a CPU profile, read from the log when no profile can
be taken.`,
		Evidence: `The gctrace log given with diagnose --gctrace: cycles per second over the
log's span; GC CPU over the span (per-cycle CPU of sweep termination, assists,
background marking and mark termination, idle marking excluded, over span ×
GOMAXPROCS); mark-assist share; stop-the-world time (sweep + mark
termination) p50/p99/max; live heap, goal and peak. Reports from 5% GC CPU:
low, 10% medium, 25% high; needs at least 10 cycles over at least 1 s. Stays
silent when a CPU profile is present (GC001 judges it then).`,
		Fix: `As for GC001: cut allocations at the hottest sites (take an allocs profile
to name them), then give the collector headroom with GOMEMLIMIT and a higher
GOGC; the peak heap grows to about live × (1 + GOGC/100).`,
		Before: `GOGC=100 ./service   # gctrace: 25 gc/s, 20 MB live`,
		After:  `GOMEMLIMIT=900MiB GOGC=400 ./service`,
		Caveats: `The log does not count background sweeping or allocation slow paths, so
its CPU share understates what a profile shows (D1: 12% in the log, ~30% of
samples). The live heap is logged in whole MB. Cycles forced by runtime.GC are
counted like the others.`,
		Since: "0.1",
		Refs: []string{
			"https://pkg.go.dev/runtime#hdr-Environment_Variables",
			"https://go.dev/doc/gc-guide",
		},
	},
	Needs: []rules.Input{rules.GCTrace},
	Uses:  []rules.Input{rules.System, rules.Metrics},
	Facts: []facts.Key{facts.CPUStacks},
	Check: check,
}

const (
	lowShare    = 0.05
	mediumShare = 0.10
	highShare   = 0.25
	minCycles   = 10
	minSpan     = time.Second
)

func check(pass *rules.Pass) error {
	ev := pass.Evidence
	if pass.Has(rules.CPU) {
		return nil // GC001 judges GC pressure from the profile
	}
	t := ev.GCTrace
	if t.Cycles < minCycles || t.Span < minSpan {
		pass.Skip(fmt.Sprintf("the gctrace log has %d GC cycles over %s; at least %d over %s are needed to judge a rate", t.Cycles, t.Span.Round(time.Millisecond), minCycles, minSpan))
		return nil
	}
	share := t.CPUShare
	if share < lowShare {
		return nil
	}
	sev := rules.Low
	switch {
	case share >= highShare:
		sev = rules.High
	case share >= mediumShare:
		sev = rules.Medium
	}
	live := t.HeapLiveMean
	f := rules.Finding{
		Severity: sev,
		Impact:   share,
		Resource: "cpu",
		ImpactBasis: "GC CPU over the log's span from the per-cycle CPU in the gctrace (idle marking excluded, sweeping not logged) " +
			"over span × GOMAXPROCS; cutting allocations and giving the GC headroom together can recover most of it",
		Evidence: []rules.Fact{
			rules.Share("GC share of CPU (gctrace)", share),
			rules.Share("mark-assist share of CPU (gctrace)", t.AssistShare),
			rules.Count("GC cycles per second", round(t.CyclesPerSec, 2), "/s"),
			rules.Count("GC cycles in the log", float64(t.Cycles), ""),
			rules.Duration("log span", t.Span),
			rules.Duration("stop-the-world p50", t.STW.P50),
			rules.Duration("stop-the-world p99", t.STW.P99),
			rules.Duration("stop-the-world max", t.STW.Max),
			rules.Bytes("live heap (mean)", live),
			rules.Bytes("heap goal (last cycle)", t.Goal),
			rules.Share("GC CPU since process start (runtime, last line)", t.CumulativeShare),
		},
	}
	if t.Procs > 0 {
		f.Evidence = append(f.Evidence, rules.Count("GOMAXPROCS (gctrace)", float64(t.Procs), ""))
	}
	settings := ev.Settings()
	if settings.GOGC == 0 {
		if g := inferGOGC(t.Last.Goal, t.Last.HeapLive, t.Last.Stacks+t.Last.Globals); g > 0 {
			settings.GOGC = g
			f.Evidence = append(f.Evidence, rules.Count("GOGC inferred from the heap goal", float64(g), ""))
			f.Caveats = append(f.Caveats, "GOGC inferred from the logged goal and live heap (whole MB): approximate.")
		}
	}
	advice := goruntime.Headroom(settings, live, share)
	text, example, shown, caveats := advice.Text, advice.Example, advice.Facts, advice.Caveats
	f.Evidence = append(f.Evidence, shown...)
	f.Summary = fmt.Sprintf("The GC log shows %.1f GC cycles/s taking %s of CPU over a %s live heap (stop-the-world p99 %s)",
		t.CyclesPerSec, human.Percent(share), human.Bytes(live), human.RoundDuration(t.STW.P99))
	var fix strings.Builder
	fix.WriteString("Cut allocations on the hot path first (take an allocs profile to name the sites: GC work follows object counts). ")
	fix.WriteString(text)
	f.Fix = fix.String()
	f.Example = example
	f.Config = advice.Config
	f.Caveats = append(f.Caveats, "Read from the gctrace log alone: it does not count background sweeping, so the real GC share is higher; a CPU profile would name the allocation sites.")
	if t.Forced > 0 {
		f.Caveats = append(f.Caveats, fmt.Sprintf("%d of the cycles were forced by runtime.GC: find the caller.", t.Forced))
	}
	f.Caveats = append(f.Caveats, caveats...)
	f.Claim = &rules.Claim{Level: rules.LevelRuntime, CPU: facts.Get(pass.Facts, facts.CPUStacks).Has(frames.GCFrames), AllocDriven: true}
	pass.Report(f)
	return nil
}

// inferGOGC solves goal = live + (live + stacks + globals) × GOGC/100 (Go
// >= 1.18) for GOGC, rounded to 10; 0 when the numbers are too coarse.
func inferGOGC(goal, live, roots uint64) int {
	if live < 8<<20 || goal <= live {
		return 0
	}
	g := 100 * float64(goal-live) / float64(live+roots)
	if g < 10 || g > 2000 {
		return 0
	}
	return int(math.Round(g/10)) * 10
}

func round(v float64, digits int) float64 {
	p := math.Pow(10, float64(digits))
	return math.Round(v*p) / p
}
