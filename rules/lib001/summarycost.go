// Package lib001 detects Prometheus Summary quantile streams that
// dominate CPU (finding class metrics-summary-cost).
package lib001

import (
	"fmt"

	"github.com/perfdoctor/perfdoctor/facts"

	"github.com/perfdoctor/perfdoctor/evidence"
	"github.com/perfdoctor/perfdoctor/internal/human"
	"github.com/perfdoctor/perfdoctor/rules"
)

// Rule is LIB001.
var Rule = &rules.Rule{
	ID:    "LIB001",
	Class: "metrics-summary-cost",
	Doc: rules.Doc{
		Title: "Prometheus Summary quantile streams take a large share of CPU",
		Text: `A prometheus.Summary with objectives keeps, per label set, several
age-bucketed quantile streams (github.com/beorn7/perks/quantile). Every
observation is buffered under a mutex and then inserted into each stream,
whose merge and compress passes are linear in the stream's size; every scrape
queries them again. On a hot path with many label sets this costs far more
than the work being measured, and the buffer mutex serialises the callers.`,
		Evidence: `CPU share of samples with a Summary or quantile-stream frame on the stack:
client_golang's (*summary) methods (Observe, asyncFlush and its goroutine,
flushColdBuf, swapBufs, newStream, Write) and any beorn7/perks/quantile
function ((*Stream).Insert/flush/Query, (*stream).merge/compress/query), also
when vendored. Summaries without objectives (noObjectivesSummary) are cheap
and not counted. The share is split into observe, flush/merge and scrape
(Write/Query), and the application code calling Observe is named. Reports from
3% of CPU; severity from the recoverable share (20% high, 8% medium, 2% low).`,
		Fix: `Replace the Summary with a Histogram: Observe is a bucket search and an
atomic add, and histograms aggregate across instances (quantiles come from
histogram_quantile in PromQL); a native histogram
(HistogramOpts.NativeHistogramBucketFactor) needs no bucket layout. If a
Summary must stay, keep fewer Objectives (each costs stream work per
observation) and fewer AgeBuckets, cut label cardinality, and put rarely
used metrics behind a switch.`,
		Before: `prometheus.NewSummaryVec(prometheus.SummaryOpts{Name: "bid_latency_seconds",
    Objectives: map[float64]float64{0.5: 0.05, 0.9: 0.01, 0.99: 0.001}}, labels)`,
		After: `prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "bid_latency_seconds",
    Buckets: prometheus.ExponentialBuckets(0.001, 2, 12)}, labels)`,
		Caveats: caveat,
		Since:   "0.1",
		Refs: []string{
			"https://prometheus.io/docs/practices/histograms/",
			"https://pkg.go.dev/github.com/prometheus/client_golang/prometheus#Summary",
		},
	},
	Needs: []rules.Input{rules.CPU},
	Facts: []facts.Key{facts.CPUStacks, facts.Owners},
	Check: check,
}

const caveat = "Changing a metric's type changes its series: dashboards and alerts that read the Summary's quantile series need histogram_quantile instead."

const clientGolang = "github.com/prometheus/client_golang/prometheus."

var (
	// Frames is the Summary family: client_golang's summary with objectives
	// and the quantile streams behind it.
	Frames = evidence.Any(summaryFrames, perksFrames)

	summaryFrames = evidence.FuncPrefix(clientGolang + "(*summary).")
	perksFrames   = evidence.FuncPrefix("github.com/beorn7/perks/quantile.")

	observeFrames = evidence.FuncPrefix(clientGolang + "(*summary).Observe")
	flushFrames   = evidence.Any(
		evidence.FuncPrefix(clientGolang+"(*summary).asyncFlush", clientGolang+"(*summary).flushColdBuf",
			clientGolang+"(*summary).swapBufs", clientGolang+"(*summary).maybeRotateStreams"),
		evidence.FuncPrefix("github.com/beorn7/perks/quantile.(*stream).merge", "github.com/beorn7/perks/quantile.(*stream).compress",
			"github.com/beorn7/perks/quantile.(*Stream).flush"),
	)
	scrapeFrames = evidence.FuncPrefix(clientGolang+"(*summary).Write", "github.com/beorn7/perks/quantile.(*Stream).Query",
		"github.com/beorn7/perks/quantile.(*stream).query")

	// metricsLib is client_golang and perks themselves: not the caller to name.
	metricsLib = evidence.FuncPrefix("github.com/prometheus/client_golang/", "github.com/beorn7/perks/")
)

const minShare = 0.03

// recoverable is the part of the Summary's cost a Histogram saves: its
// Observe is a bucket search and an atomic add.
const recoverable = 0.9

func check(pass *rules.Pass) error {
	if !pass.EnoughCPU() {
		return nil
	}
	cpu := facts.Get(pass.Facts, facts.CPUStacks)
	share := cpu.Share(Frames)
	if share < minShare {
		return nil
	}
	inFlush, inScrape := cpu.Has(flushFrames), cpu.Has(scrapeFrames)
	flushShare := cpu.Share(flushFrames)
	scrapeShare := cpu.ShareWhere(func(s evidence.Sample) bool { return inScrape(s) && !inFlush(s) })
	observeShare := cpu.Share(observeFrames)

	app := func(fn string) bool { return rules.IsApplication(fn) && !metricsLib(fn) }
	caller := cpu.CallerOf(observeFrames, app)
	callers := cpu.TopSites(5, caller)

	impact := share * recoverable
	f := rules.Finding{
		Severity:    rules.SeverityFor(impact),
		Impact:      impact,
		Resource:    "cpu",
		ImpactBasis: "share of CPU under the Summary's observe, flush/merge and scrape paths; a Histogram's Observe is O(1), so nearly all of it (90%)",
		Summary:     fmt.Sprintf("Prometheus Summary quantile streams use %s of CPU", human.Percent(share)),
		Evidence: []rules.Fact{
			rules.Share("Summary share of CPU", share),
			rules.Share("flush and stream merge/compress", flushShare),
			rules.Share("Observe (buffering, lock)", observeShare),
			rules.Share("scrape (Write, Query)", scrapeShare),
		},
		Fix: "Replace the prometheus.Summary (NewSummary/NewSummaryVec with Objectives) by a prometheus.Histogram " +
			"(HistogramOpts.Buckets, or a native histogram with NativeHistogramBucketFactor) and compute quantiles " +
			"with histogram_quantile; if a Summary must stay, keep one or two Objectives, fewer AgeBuckets and fewer label " +
			"sets, and switch off the metrics nobody reads.",
		Example:   pass.Rule.Doc.Before + "\n->\n" + pass.Rule.Doc.After,
		Caveats:   []string{caveat},
		Locations: rules.Locations(callers, "code calling Summary.Observe"),
		Frames:    cpu.Matched(Frames, 12),
	}
	if flushShare > share/2 {
		f.Summary += fmt.Sprintf(", %s of it merging and compressing streams after each buffer flush", human.Percent(flushShare))
	}
	if len(callers) > 0 {
		f.Summary += " (observed from " + rules.ShortFunc(callers[0].Func) + ")"
		// A packaged program's or a dependency's metrics are its
		// maintainers' to change; the user can only turn them off or
		// trim them where it offers that.
		var whose rules.Fact
		var editable bool
		f.Fix, whose, editable = rules.Advise(facts.Get(pass.Facts, facts.Owners), callers[0].Frame, f.Fix,
			"Look for a setting that turns these metrics off or trims their labels, and raise the Summary with its maintainers (a Histogram observes in O(1)).")
		f.Evidence = append(f.Evidence, whose)
		if !editable {
			f.Example = ""
		}
	} else {
		f.Caveats = append(f.Caveats, "No application frame calls Observe in the sampled stacks: the flush runs on client_golang's own goroutine, so find the Summary by its metric name in the code.")
	}
	f.Claim = &rules.Claim{Level: rules.LevelCode, CPU: cpu.Has(Frames), Regrade: rules.SeverityFor}
	pass.Report(f)
	return nil
}
