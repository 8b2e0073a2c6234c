// Package jvm020 notes CPU samples whose stacks were cut at the
// recording's stack depth (finding class jvm-truncated-stacks).
package jvm020

import (
	"fmt"

	"github.com/perfdoctor/perfdoctor/formats/jfr"
	"github.com/perfdoctor/perfdoctor/internal/human"
	"github.com/perfdoctor/perfdoctor/rules"
)

// Rule is JVM020.
var Rule = &rules.Rule{
	ID:    "JVM020",
	Class: "jvm-truncated-stacks",
	Doc: rules.Doc{
		Title: "Sampled stacks are cut at the recording's stack depth",
		Text: `JFR keeps the top 64 frames of each stack by default and drops the rest,
marking the stack truncated. Under a deep framework (servlet filters,
Spring's proxies and interceptors, reactive operators) a request's stack is
often deeper: the hot leaf frames survive, but the callers that say which
endpoint or which of the application's methods the time belongs to are
gone, and a flame graph shows the samples as separate roots. This is a
caveat on the CPU findings of the same recording, not a cost.`,
		Evidence: `From a JFR recording's execution samples (at least 100): the share of stack
traces flagged truncated (or, from a profiler that does not flag them, of
the length of a common depth limit). Reports from 5% of samples (info),
low from 25%. Healthy programs recorded here have no truncated stack
(deepest 13 frames); DeepStacks.java (100 calls deep) has 99.7%, and none
under -XX:FlightRecorderOptions:stackdepth=256 (deepest 109 frames).`,
		Fix: `Record deeper stacks: start the JVM with
-XX:FlightRecorderOptions:stackdepth=256 (JDK 11 and later), or on a
running JVM before its first recording jcmd PID JFR.configure
stackdepth=256 (the depth cannot change once JFR has started in the
process). Deeper stacks cost a little more per sample; 256 to 512 covers
most frameworks. async-profiler records 2048 frames by default
(jstackdepth).`,
		Before:  `java -XX:StartFlightRecording -jar app.jar`,
		After:   `java -XX:FlightRecorderOptions:stackdepth=256 -XX:StartFlightRecording -jar app.jar`,
		Caveats: "Findings that name a hot function stay right; those that name the application code calling it may name a frame in the middle of the stack, or none.",
		Since:   "0.2",
		Refs:    []string{"https://docs.oracle.com/en/java/javase/21/docs/specs/man/java.html#advanced-runtime-options-for-java"},
	},
	Needs: []rules.Input{rules.JVM},
	Check: check,
}

const (
	infoShare = 0.05
	lowShare  = 0.25
)

// depthLimits are the stack depths profilers are commonly set to.
var depthLimits = map[int]bool{64: true, 128: true, 256: true, 512: true, 1024: true, 2048: true}

func check(pass *rules.Pass) error {
	st := pass.Evidence.JVM.VM.Stacks
	if st.Samples < rules.MinCPUSamples {
		return nil
	}
	cut := cutStacks(st)
	share := float64(cut) / float64(st.Samples)
	if share < infoShare {
		return nil
	}
	sev := rules.Info
	if share >= lowShare {
		sev = rules.Low
	}
	pass.Report(rules.Finding{
		Severity:    sev,
		Resource:    "cpu",
		ImpactBasis: "a caveat on the recording's CPU findings: no cost of its own",
		Summary: fmt.Sprintf("%s of CPU samples have their stacks cut at %d frames: the callers below are not seen",
			human.Percent(share), st.MaxDepth),
		Evidence: []rules.Fact{
			rules.Share("CPU samples with a truncated stack", share),
			rules.Count("deepest stack kept", float64(st.MaxDepth), "frames"),
			rules.Count("CPU samples", float64(st.Samples), ""),
		},
		Fix:     pass.Rule.Doc.Fix,
		Example: pass.Rule.Doc.Before + "\n->\n" + pass.Rule.Doc.After,
		Caveats: []string{pass.Rule.Doc.Caveats},
	})
	return nil
}

// cutStacks counts the samples whose stacks were cut.
func cutStacks(st jfr.SampledStacks) int {
	if st.Truncated > 0 {
		return st.Truncated
	}
	if depthLimits[st.MaxDepth] {
		return st.AtMaxDepth
	}
	return 0
}
