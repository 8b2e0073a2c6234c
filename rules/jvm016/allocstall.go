// Package jvm016 detects threads stalled waiting for the collector to free
// memory: ZGC's allocation stalls, and G1's evacuation failures (finding
// class jvm-allocation-stalls).
package jvm016

import (
	"fmt"
	"time"

	"github.com/perfdoctor/perfdoctor/formats/jfr"
	"github.com/perfdoctor/perfdoctor/internal/human"
	"github.com/perfdoctor/perfdoctor/rules"
)

// Rule is JVM016.
var Rule = &rules.Rule{
	ID:    "JVM016",
	Class: "jvm-allocation-stalls",
	Doc: rules.Doc{
		Title: "Threads stall waiting for the collector to free memory",
		Text: `A concurrent collector (ZGC, Shenandoah) frees memory while the application
runs; when the application allocates faster than it frees, or the live set
leaves too little headroom, an allocating thread has nothing to allocate
from and stops until a collection cycle ends: an allocation stall, a pause
of that thread as long as a GC cycle, which no pause-time figure shows. G1's
equivalent is an evacuation failure (to-space exhausted): a young
collection finds no free region to copy live objects into, takes far
longer, and is often followed by a full collection.`,
		Evidence: `From a JFR recording: jdk.ZAllocationStall (each stalled allocation, its
duration, thread and stack) and jdk.EvacuationFailed (G1). Reports any
allocation stall (the time at least one thread was stalled, against wall
time), graded medium from 1% of wall time or a 100 ms stall and high from
10% or a 1 s stall, and G1 evacuation failures (low; medium from 5). The
healthy programs recorded here with ZGC and G1 (JDK 17 and 25) stall
never and fail no evacuation. AllocStall.java (3 s, about 60 MB live)
stalls 80% of the time in a 96 MB heap and 17% in 512 MB.`,
		Fix: `Give the collector headroom: a larger heap (-Xmx) for the same live set,
or a smaller live set. With ZGC, -XX:SoftMaxHeapSize below -Xmx lets ZGC
collect early, aiming at the soft limit while keeping the rest for
bursts; more concurrent threads (-XX:ConcGCThreads) collect faster at the
cost of CPU; generational ZGC (-XX:+UseZGC -XX:+ZGenerational on JDK 21
and 22, the default from JDK 23, the only mode from JDK 24) collects young
objects far more cheaply than single-generation ZGC. Then allocate less
on the stalling paths (the stack sites named here). With G1, raise
-XX:G1ReservePercent or the heap, and look for humongous allocations.`,
		Before:  `java -XX:+UseZGC -Xmx96m -jar app.jar    # live set ~60 MB`,
		After:   `java -XX:+UseZGC -Xmx512m -XX:SoftMaxHeapSize=384m -jar app.jar`,
		Caveats: "A stall is a symptom of too little heap for the allocation rate and live set: the allocation sites are where to allocate less, not necessarily where the memory is held.",
		Since:   "0.2",
		Refs: []string{
			"https://docs.oracle.com/en/java/javase/21/gctuning/z-garbage-collector.html",
			"https://openjdk.org/jeps/439",
			"https://openjdk.org/jeps/474",
		},
	},
	Needs: []rules.Input{rules.JVM},
	Check: check,
}

const (
	longStall     = 100 * time.Millisecond
	veryLongStall = time.Second
	manyFailures  = 5
)

func check(pass *rules.Pass) error {
	s := pass.Evidence.JVM
	span := s.Span()
	if span <= 0 {
		return nil
	}
	if st := s.VM.AllocationStalls; st.Count > 0 {
		stalls(pass, s, st, span)
	}
	if n := s.VM.EvacuationFailures; n > 0 {
		evacuationFailures(pass, s, n)
	}
	return nil
}

func stalls(pass *rules.Pass, s *jfr.Summary, st jfr.Stalls, span time.Duration) {
	share := min(st.Stalled.Seconds()/span.Seconds(), 1)
	sev := rules.Low
	switch {
	case share >= 0.1 || st.Max >= veryLongStall:
		sev = rules.High
	case share >= 0.01 || st.Max >= longStall:
		sev = rules.Medium
	}
	f := rules.Finding{
		Severity:    sev,
		Impact:      share,
		Resource:    "latency",
		ImpactBasis: "share of wall time in which at least one thread was stalled allocating, waiting for the collector",
		Summary: fmt.Sprintf("%d allocation stalls: threads waited for ZGC to free memory %s of the time (longest %s, %d threads)",
			st.Count, human.Percent(share), human.RoundDuration(st.Max), st.Threads),
		Evidence: []rules.Fact{
			rules.Share("wall time with a thread stalled allocating", share),
			rules.Count("allocation stalls (jdk.ZAllocationStall)", float64(st.Count), ""),
			rules.Duration("stalled in total, all threads", st.Total),
			rules.Duration("longest stall", st.Max),
			rules.Text("collector", collectorLine(s)),
		},
		Fix:     pass.Rule.Doc.Fix + versionAdvice(s),
		Example: pass.Rule.Doc.Before + "\n->\n" + pass.Rule.Doc.After,
		Caveats: []string{pass.Rule.Doc.Caveats},
	}
	f.Locations = rules.JFRLocations(st.Sites, 5, "allocation that stalled")
	if len(st.Sites) > 0 {
		f.Summary += ", mostly in " + rules.ShortFunc(st.Sites[0].Function)
	}
	pass.Report(f)
}

func evacuationFailures(pass *rules.Pass, s *jfr.Summary, n int) {
	sev := rules.Low
	if n >= manyFailures {
		sev = rules.Medium
	}
	pass.Report(rules.Finding{
		Severity:    sev,
		Resource:    "latency",
		ImpactBasis: "not measured: the collections that failed to evacuate are in the pause times (JVM003)",
		Summary:     fmt.Sprintf("G1 ran out of room to evacuate live objects %d times (to-space exhausted)", n),
		Evidence: []rules.Fact{
			rules.Count("evacuation failures (jdk.EvacuationFailed)", float64(n), ""),
			rules.Count("collections", float64(s.GC.Collections), ""),
			rules.Text("collector", collectorLine(s)),
		},
		Fix:     "The heap has too little free space for the live objects each young collection copies: raise -Xmx (or lower the live set), raise -XX:G1ReservePercent (10 by default) to keep more regions free for evacuation, and look for humongous allocations (objects of half a region or more) in the allocation profile.",
		Example: "java -XX:+UseG1GC -Xmx128m -jar app.jar\n->\njava -XX:+UseG1GC -Xmx512m -XX:G1ReservePercent=15 -jar app.jar",
		Caveats: []string{"Evacuation failures lengthen the pauses JVM003 reports; this finding says why they are long."},
	})
}

func collectorLine(s *jfr.Summary) string {
	line := s.GC.Young + " / " + s.GC.Old
	if jdk := s.JDK(); jdk > 0 {
		line += fmt.Sprintf(", JDK %d", jdk)
	}
	return line
}

// versionAdvice names the ZGC mode to move to for the JVM's release.
func versionAdvice(s *jfr.Summary) string {
	jdk := s.JDK()
	generational := s.GC.Young == "ZGC Minor" // single-generation ZGC names its young collector N/A
	switch {
	case jdk >= 21 && jdk < 23 && !generational:
		return fmt.Sprintf(" This JVM (JDK %d) runs single-generation ZGC: add -XX:+ZGenerational.", jdk)
	case jdk > 0 && jdk < 21:
		return fmt.Sprintf(" This JVM (JDK %d) has only single-generation ZGC: JDK 21 or later brings generational ZGC.", jdk)
	}
	return ""
}
