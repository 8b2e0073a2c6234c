package report

import (
	"fmt"
	"sort"
	"strings"

	"github.com/perfdoctor/perfdoctor/bundle"
	"github.com/perfdoctor/perfdoctor/internal/human"
)

// errorKinds is "kind=n, ..." sorted by kind.
func errorKinds(l *bundle.LoadResult) string {
	kinds := make([]string, 0, len(l.ErrorsByKind))
	for k, n := range l.ErrorsByKind {
		kinds = append(kinds, fmt.Sprintf("%s=%d", k, n))
	}
	sort.Strings(kinds)
	return strings.Join(kinds, ", ")
}

// describeLoad is the one-line summary for text and Markdown.
func describeLoad(l *bundle.LoadResult) string {
	var b strings.Builder
	if l.Mode == "command" {
		fmt.Fprintf(&b, "`%s`, %.1f %ss/s over %.0fs (%d runs of %d), latency not measured", l.Command, l.Throughput, l.Unit, l.DurationMS/1000, l.Runs, l.UnitsPerRun)
		if l.Errors > 0 {
			fmt.Fprintf(&b, ", %d %ss in failed runs", l.Errors, l.Unit)
		}
		if l.Interrupted {
			b.WriteString(", interrupted")
		}
		return b.String()
	}
	if l.Mode == "open" {
		fmt.Fprintf(&b, "open loop at %g req/s", l.Rate)
	} else {
		fmt.Fprintf(&b, "closed loop, %d connections", l.Concurrency)
	}
	fmt.Fprintf(&b, ", %.1f req/s over %.0fs, latency p50 %s p99 %s p99.9 %s max %s", l.Throughput, l.DurationMS/1000,
		human.Millis(l.Latency.P50), human.Millis(l.Latency.P99), human.Millis(l.Latency.P999), human.Millis(l.Latency.Max))
	if l.Mode == "open" {
		fmt.Fprintf(&b, " (from the due time; service p99 %s; %d late, %d never sent)", human.Millis(l.Service.P99), l.LateSends, l.Dropped)
	}
	fmt.Fprintf(&b, ", %d errors", l.Errors)
	if l.Errors > 0 {
		b.WriteString(" (" + errorKinds(l) + ")")
	}
	if l.Interrupted {
		b.WriteString(", interrupted")
	}
	return b.String()
}
