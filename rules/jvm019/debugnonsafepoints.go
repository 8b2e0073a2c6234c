// Package jvm019 notes CPU samples taken by JFR's execution sampler from a
// JVM without -XX:+DebugNonSafepoints, whose line attribution is biased
// to safepoint polls (finding class jvm-safepoint-bias).
package jvm019

import (
	"fmt"

	"github.com/perfdoctor/perfdoctor/rules"
)

// Rule is JVM019.
var Rule = &rules.Rule{
	ID:    "JVM019",
	Class: "jvm-safepoint-bias",
	Doc: rules.Doc{
		Title: "JFR's CPU samples are attributed to safepoint polls (DebugNonSafepoints is off)",
		Text: `The JIT records where in the source each instruction comes from only at
safepoint polls (loop back-edges, method returns) unless
-XX:+DebugNonSafepoints is set. JFR's execution sampler stops a thread
anywhere, then maps its instruction to the nearest recorded point: the
sample lands on a loop's back-edge or a caller's line rather than the line
that ran, and inlined methods are merged into their caller. Hot functions
are still right, hot lines and inlined callees less so. This is a caveat on
the CPU findings of the same recording, not a cost.`,
		Evidence: `From a JFR recording: the JVM's flags (jdk.BooleanFlag; DebugNonSafepoints is
a diagnostic flag, listed only when unlocked, off unless set) and the
execution samples (jdk.ExecutionSample, at least 100). Silent when the
samples come from async-profiler, which turns the same debug information
on through JVMTI.`,
		Fix: `Start the JVM with -XX:+UnlockDiagnosticVMOptions -XX:+DebugNonSafepoints
(every JDK from 8; the flag cannot be set on a running JVM). It costs a
little more memory for compiled code's debug information and nothing at
run time. Loading async-profiler (perfdoctor collect --jvm) turns the same
information on for code compiled after it attaches.`,
		Before:  `java -XX:StartFlightRecording -jar app.jar`,
		After:   `java -XX:+UnlockDiagnosticVMOptions -XX:+DebugNonSafepoints -XX:StartFlightRecording -jar app.jar`,
		Caveats: "Function-level shares are unaffected; only the line and the inlined callee within a compiled method shift.",
		Since:   "0.2",
		Refs: []string{
			"https://psy-lob-saw.blogspot.com/2016/02/why-most-sampling-java-profilers-are.html",
			"https://github.com/async-profiler/async-profiler",
		},
	},
	Needs: []rules.Input{rules.JVM},
	Check: check,
}

func check(pass *rules.Pass) error {
	vm := pass.Evidence.JVM.VM
	// The samples are async-profiler's (collect --jvm names it in the
	// summary; its own recordings in their settings): no safepoint bias.
	fromProfiler := vm.Profiler != "" || pass.Evidence.JVM.Profiler != ""
	if !vm.FlagsRecorded || vm.DebugNonSafepoints || fromProfiler || vm.Stacks.Samples < rules.MinCPUSamples {
		return nil
	}
	pass.Report(rules.Finding{
		Severity:    rules.Info,
		Resource:    "cpu",
		ImpactBasis: "a caveat on the recording's CPU findings: no cost of its own",
		Summary: fmt.Sprintf("Lines in the %d CPU samples are biased to safepoint polls: the JVM runs without -XX:+DebugNonSafepoints",
			vm.Stacks.Samples),
		Evidence: []rules.Fact{
			rules.Text("DebugNonSafepoints (jdk.BooleanFlag)", "off"),
			rules.Count("CPU samples from JFR's execution sampler", float64(vm.Stacks.Samples), ""),
		},
		Fix:     pass.Rule.Doc.Fix,
		Example: pass.Rule.Doc.Before + "\n->\n" + pass.Rule.Doc.After,
		Caveats: []string{pass.Rule.Doc.Caveats},
	})
	return nil
}
