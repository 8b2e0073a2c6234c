// Package jvm003 detects a JVM whose collector pauses take a large share
// of wall time or stop it for over a second (finding class jvm-gc-pauses).
package jvm003

import (
	"fmt"
	"time"

	"github.com/perfdoctor/perfdoctor/internal/human"
	"github.com/perfdoctor/perfdoctor/rules"
)

// Rule is JVM003.
var Rule = &rules.Rule{
	ID:    "JVM003",
	Class: "jvm-gc-pauses",
	Doc: rules.Doc{
		Title: "Garbage collection pauses stop the JVM too long",
		Text: `Every collector pause stops the application's threads: requests in flight
wait for it, and a service whose pauses add up to a tenth of wall time has
lost that much throughput and gained that much latency. A single pause over a
second fails health checks and time-outs upstream.`,
		Evidence: `From a JFR recording (jdk.GarbageCollection): the sum of pauses over the
recording's span, and the longest pause with its cause. Reports when pauses
exceed 10% of wall time or one pause exceeds 1 s.`,
		Fix: `Find what the heap is doing first: allocation pressure (the allocation
profile's top sites) drives young pauses, a heap too small for the live set
drives back-to-back and full collections. Allocate less on the hot path, size
the heap for the live set (-Xmx, or -XX:MaxRAMPercentage in containers), and
use a collector built for pause times: G1 with -XX:MaxGCPauseMillis, or ZGC
(-XX:+UseZGC, generational from JDK 21) for large heaps with tight latency.`,
		Before:  `java -XX:+UseParallelGC -Xmx512m -jar app.jar`,
		After:   `java -XX:+UseZGC -XX:+ZGenerational -Xmx4g -jar app.jar`,
		Caveats: "A pause caused by System.gc() is JVM004's finding; a heap dump or class unloading can also pause.",
		Since:   "0.2",
		Refs:    []string{"https://docs.oracle.com/en/java/javase/21/gctuning/"},
	},
	Needs: []rules.Input{rules.JVM},
	Check: check,
}

const (
	maxShare = 0.10
	maxPause = time.Second
)

func check(pass *rules.Pass) error {
	s := pass.Evidence.JVM
	span := s.Span()
	if span <= 0 || s.GC.Collections == 0 {
		return nil
	}
	g := s.GC
	share := g.PauseTotal.Seconds() / span.Seconds()
	if share <= maxShare && g.PauseMax <= maxPause {
		return nil
	}
	f := rules.Finding{
		Severity:    rules.Grade(share, 0.05, 0.2),
		Impact:      share,
		Resource:    "latency",
		ImpactBasis: "share of wall time the collector stopped the application",
		Summary:     fmt.Sprintf("GC pauses stop the JVM %s of the time (%d collections, longest %s)", human.Percent(share), g.Collections, g.PauseMax.Round(time.Millisecond)),
		Evidence: []rules.Fact{
			rules.Share("GC pause time share of wall time", share),
			rules.Count("collections", float64(g.Collections), ""),
			rules.Text("longest pause", fmt.Sprintf("%s (%s)", g.PauseMax.Round(time.Millisecond), g.PauseMaxCause)),
			rules.Text("collectors", g.Young+" / "+g.Old),
		},
		Fix:     pass.Rule.Doc.Fix,
		Example: pass.Rule.Doc.Before + "\n->\n" + pass.Rule.Doc.After,
		Caveats: []string{pass.Rule.Doc.Caveats},
	}
	if g.PauseMax > maxPause {
		f.Severity = rules.High
		f.Summary = fmt.Sprintf("A GC pause of %s (%s); pauses take %s of the time", g.PauseMax.Round(time.Millisecond), g.PauseMaxCause, human.Percent(share))
	}
	pass.Report(f)
	return nil
}
