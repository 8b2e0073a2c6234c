// Package jvm004 detects application code calling System.gc()
// (finding class jvm-explicit-gc).
package jvm004

import (
	"fmt"
	"strings"
	"time"

	"github.com/perfdoctor/perfdoctor/rules"
)

// Rule is JVM004.
var Rule = &rules.Rule{
	ID:    "JVM004",
	Class: "jvm-explicit-gc",
	Doc: rules.Doc{
		Title: "System.gc() is called explicitly",
		Text: `System.gc() asks for a full collection: with most collectors a
stop-the-world pause over the whole heap, whatever the heap's state. Libraries
call it to release direct buffers, applications to "clean up"; either way the
collector knows better when to run.`,
		Evidence: `From a JFR recording: collections whose cause is System.gc() (jdk.GarbageCollection),
their pause time, and the code that called it (jdk.SystemGC stacks). Reports
any explicit collection unless -XX:+DisableExplicitGC is set.`,
		Fix: `Remove the call. Where a library calls it (RMI's distributed GC every hour,
direct-buffer cleanup), turn it into a concurrent cycle with
-XX:+ExplicitGCInvokesConcurrent (G1), or ignore it with -XX:+DisableExplicitGC
once nothing depends on it; raise -Dsun.rmi.dgc.server.gcInterval for RMI.`,
		Before:  `cache.clear(); System.gc();`,
		After:   `cache.clear();`,
		Caveats: "-XX:+DisableExplicitGC also stops direct-buffer allocation from forcing a collection when -XX:MaxDirectMemorySize is reached; test that path.",
		Since:   "0.2",
		Refs:    []string{"https://docs.oracle.com/en/java/javase/21/gctuning/garbage-first-g1-garbage-collector1.html"},
	},
	Needs: []rules.Input{rules.JVM},
	Check: check,
}

func check(pass *rules.Pass) error {
	s := pass.Evidence.JVM
	g := s.GC
	if g.Explicit == 0 || g.ExplicitOff {
		return nil
	}
	share := 0.0
	if span := s.Span(); span > 0 {
		share = g.ExplicitPause.Seconds() / span.Seconds()
	}
	f := rules.Finding{
		Severity:    max(rules.Low, rules.SeverityFor(share)),
		Impact:      share,
		Resource:    "latency",
		ImpactBasis: "share of wall time spent in pauses caused by System.gc()",
		Summary:     fmt.Sprintf("System.gc() caused %d collection(s), %s of pauses", g.Explicit, g.ExplicitPause.Round(time.Millisecond)),
		Evidence: []rules.Fact{
			rules.Count("collections caused by System.gc()", float64(g.Explicit), ""),
			rules.Text("their pauses", g.ExplicitPause.Round(time.Millisecond).String()),
		},
		Fix:     pass.Rule.Doc.Fix,
		Example: pass.Rule.Doc.Before + "\n->\n" + pass.Rule.Doc.After,
		Caveats: []string{pass.Rule.Doc.Caveats},
	}
	for _, c := range g.ExplicitCallers {
		f.Locations = append(f.Locations, rules.Location{Function: c, Role: "code calling System.gc()"})
	}
	if len(g.ExplicitCallers) > 0 {
		f.Summary += " (called from " + strings.Join(g.ExplicitCallers, ", ") + ")"
	}
	pass.Report(f)
	return nil
}
