// Package jvm015 detects a JVM that waits long for its threads to reach
// safepoints, or stops them for VM operations other than garbage
// collection (finding class jvm-safepoint-stalls).
package jvm015

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/perfdoctor/perfdoctor/formats/jfr"
	"github.com/perfdoctor/perfdoctor/internal/human"
	"github.com/perfdoctor/perfdoctor/rules"
)

// Rule is JVM015.
var Rule = &rules.Rule{
	ID:    "JVM015",
	Class: "jvm-safepoint-stalls",
	Doc: rules.Doc{
		Title: "Safepoints stop the JVM too long outside garbage collection",
		Text: `Many of the JVM's own operations (a collection, a thread dump, a heap dump,
deoptimization, class redefinition) stop every Java thread at a safepoint.
The VM first asks all threads to stop and waits until the last one reaches
a safepoint poll: the threads already stopped wait with it. A thread in a
long loop without a poll (a counted int loop under the Serial or Parallel
collector, which compile them without polls), or a thread that gets no CPU
to reach its poll, holds the whole JVM up for the time it takes. Operations
asked for by tools and monitoring code (thread dumps, heap dumps and
histograms) then stop the JVM for as long as they run.`,
		Evidence: `From a JFR recording: jdk.SafepointBegin (time to safepoint: from the
request to every thread stopped) and jdk.ExecuteVMOperation (each
operation, its duration, whether it ran at a safepoint and which thread
asked for it). The code that held safepoints up is where late threads
reached their poll (jdk.SafepointLatency, JDK 24 and later, when enabled),
else the code the execution sampler found running while a safepoint waited
5 ms or more.
Reports when the time to safepoint exceeds 2% of wall time or one wait
exceeds 100 ms, or when operations other than garbage collection (and other
than the recording's own) stop the JVM over 2% of wall time or once over
100 ms. The healthy programs recorded here (rules/testdata/jvm, JDK 17 and
25, G1 and ZGC) measure a time to safepoint of 0.005% to 0.12% of wall
time (the longest 0.1 to 3.1 ms) and non-GC operations at most 0.003%.
Safepoints.java under the Serial collector waits 76% of the time; with
-XX:+UseCountedLoopSafepoints, 21% on the same machine at a load average of
25, where the rest is threads waiting for a CPU.`,
		Fix: `By cause. A counted loop without polls: on JDK 10 and later add
-XX:+UseCountedLoopSafepoints -XX:LoopStripMiningIter=1000 (the default with
G1, ZGC and Shenandoah, not with Serial or Parallel, which the JVM picks by
itself on fewer than 2 CPUs or under 1792 MB), or split the loop into
chunks. A machine or container out of CPU (CFS throttling): give the JVM
the CPUs its threads need. Thread dumps (Thread.getAllStackTraces,
ThreadMXBean.dumpAllThreads, jstack): take them rarely, not from a
watchdog every few milliseconds. Heap dumps and class histograms (jmap,
jcmd GC.heap_dump, GC.class_histogram): never on a schedule in production;
JFR's jdk.OldObjectSample finds leaks without stopping the JVM. Biased
lock revocation (RevokeBias, BulkRevokeBias on JDK 8-14):
-XX:-UseBiasedLocking (off by default from JDK 15, removed in JDK 18).
Collection pauses themselves are JVM003's.`,
		Before: `// java -XX:+UseParallelGC: no safepoint poll inside this loop
for (int i = 0; i < n; i++) h = h * 31 + a[i];`,
		After:   `java -XX:+UseParallelGC -XX:+UseCountedLoopSafepoints -XX:LoopStripMiningIter=1000 -jar app.jar`,
		Caveats: "Without jdk.SafepointLatency (JDK 24 and later, off by default: +jdk.SafepointLatency#enabled=true), the code that held a safepoint up is found only when the execution sampler caught it in the wait.",
		Since:   "0.2",
		Refs: []string{
			"https://shipilev.net/jvm/anatomy-quarks/22-safepoint-polls/",
			"https://docs.oracle.com/en/java/javase/21/docs/specs/man/java.html",
		},
	},
	Needs: []rules.Input{rules.JVM},
	Check: check,
}

const (
	minShare = 0.02
	minWait  = 100 * time.Millisecond
	// busyMachine is the machine CPU load from which threads may simply not
	// get a CPU to reach their poll.
	busyMachine = 0.9
)

func check(pass *rules.Pass) error {
	s := pass.Evidence.JVM
	span := s.Span()
	if span <= 0 || s.VM.Safepoints == 0 && len(s.VM.Operations) == 0 {
		return nil
	}
	timeToSafepoint(pass, s, span)
	operations(pass, s, span)
	return nil
}

// timeToSafepoint reports the wait for threads to reach safepoints.
func timeToSafepoint(pass *rules.Pass, s *jfr.Summary, span time.Duration) {
	vm := s.VM
	share := vm.TimeToSafepoint.Seconds() / span.Seconds()
	if share < minShare && vm.TimeToSafepointMax < minWait {
		return
	}
	f := rules.Finding{
		Severity:    severity(share, vm.TimeToSafepointMax),
		Impact:      share,
		Resource:    "latency",
		ImpactBasis: "share of wall time spent waiting for threads to reach safepoints, while the threads already stopped waited too",
		Summary: fmt.Sprintf("Threads take %s of the time to reach safepoints (%d safepoints, longest wait %s)",
			human.Percent(share), vm.Safepoints, human.RoundDuration(vm.TimeToSafepointMax)),
		Evidence: []rules.Fact{
			rules.Share("time to safepoint, share of wall time", share),
			rules.Duration("longest time to safepoint", vm.TimeToSafepointMax),
			rules.Count("safepoints", float64(vm.Safepoints), ""),
		},
		Caveats: []string{pass.Rule.Doc.Caveats},
	}
	if vm.TimeToSafepointMaxOp != "" {
		f.Evidence = append(f.Evidence, rules.Text("operation the longest wait was for", vm.TimeToSafepointMaxOp))
	}
	sites := byFunction(vm.SlowSafepointSites)
	f.Locations = rules.JFRLocations(sites, 5, "held a safepoint up")
	var causes []string
	if len(sites) > 0 {
		site := sites[0]
		f.Summary += fmt.Sprintf("; %s held them up", rules.ShortFunc(site.Function))
		if vm.FlagsRecorded && !vm.CountedLoopSafepoints {
			causes = append(causes, fmt.Sprintf("UseCountedLoopSafepoints is off (the default with the %s collector): the JIT leaves no safepoint poll inside counted loops, so a long int-indexed loop in %s runs to its end before its thread stops. On JDK 10 and later add -XX:+UseCountedLoopSafepoints -XX:LoopStripMiningIter=1000 (G1, the default from 2 CPUs and 1792 MB, turns both on), or split the loop into chunks.%s",
				collector(s), rules.ShortFunc(site.Function), jdkNote(s.JDK(), 10)))
			f.Example = pass.Rule.Doc.Before + "\n->\n" + pass.Rule.Doc.After
		} else {
			causes = append(causes, fmt.Sprintf("Code in %s kept running while the safepoint waited: look there for a long loop without a safepoint poll (a counted loop, or a large System.arraycopy or array fill), or a long call into native code through JNI critical sections.", rules.ShortFunc(site.Function)))
		}
	}
	if s.MachineCPU >= busyMachine {
		causes = append(causes, fmt.Sprintf("The machine's CPUs were %s busy: threads waited for a CPU to reach their poll. Give the JVM the CPUs it needs (a container's CPU limit throttles it) or move the other load away.", human.Percent(s.MachineCPU)))
		f.Evidence = append(f.Evidence, rules.Share("machine CPU load (jdk.CPULoad)", s.MachineCPU))
	}
	if len(causes) == 0 {
		causes = append(causes, pass.Rule.Doc.Fix)
	}
	f.Fix = strings.Join(causes, " ")
	pass.Report(f)
}

// operations reports VM operations other than collections that stopped
// the JVM long.
func operations(pass *rules.Pass, s *jfr.Summary, span time.Duration) {
	var total, longest time.Duration
	var ops []jfr.VMOperation
	for _, op := range s.VM.Operations {
		if !op.AtSafepoint || isGC(op.Name) || isRecording(op.Name) {
			continue
		}
		total += op.Total
		longest = max(longest, op.Max)
		ops = append(ops, op)
	}
	share := total.Seconds() / span.Seconds()
	if share < minShare && longest < minWait {
		return
	}
	top := ops[0] // ordered by total time
	f := rules.Finding{
		Severity:    severity(share, longest),
		Impact:      share,
		Resource:    "latency",
		ImpactBasis: "share of wall time the JVM was stopped for VM operations other than garbage collection",
		Summary: fmt.Sprintf("VM operations stop the JVM %s of the time, mostly %s (%d, longest %s, asked for by %s)",
			human.Percent(share), top.Name, top.Count, human.RoundDuration(top.Max), callers(top)),
		Evidence: []rules.Fact{rules.Share("non-GC VM operations at safepoints, share of wall time", share), rules.Duration("longest", longest)},
		Fix:      prescription(top, s.JDK()),
	}
	if isThreadDump(top.Name) {
		f.Example = threadDumpExample
	}
	for _, op := range ops[:min(len(ops), 4)] {
		f.Evidence = append(f.Evidence, rules.Text("operation "+op.Name, fmt.Sprintf("%d in %s, longest %s, asked for by %s",
			op.Count, human.RoundDuration(op.Total), human.RoundDuration(op.Max), callers(op))))
	}
	pass.Report(f)
}

func severity(share float64, longest time.Duration) rules.Severity {
	sev := rules.Grade(share, 0.05, 0.2)
	switch {
	case longest >= time.Second:
		sev = rules.High
	case longest >= minWait:
		sev = max(sev, rules.Medium)
	}
	return sev
}

// isGC matches the collectors' VM operations, whose pauses JVM003 reports.
func isGC(op string) bool {
	for _, p := range []string{"G1", "Z", "Shenandoah", "GenCollect", "ParallelGC", "CMS", "SerialCollect", "CollectFor", "XMark", "XRelocate"} {
		if strings.HasPrefix(op, p) {
			return true
		}
	}
	return false
}

// isRecording matches the operations the flight recording itself asks for.
func isRecording(op string) bool {
	return strings.HasPrefix(op, "JFR") || op == "ClassLoaderStatsOperation"
}

// prescription is the fix for the operation that stopped the JVM most.
func prescription(op jfr.VMOperation, jdk int) string {
	tool := ""
	for _, c := range op.Callers {
		if c == "Attach Listener" {
			tool = " It was asked for through the attach mechanism: a tool (jcmd, jstack, jmap, an agent or a monitoring system) run against this JVM."
		}
	}
	if isThreadDump(op.Name) {
		return "Thread dumps stop every thread for as long as the walk of all stacks takes, and each waits for the slowest thread to stop: take them rarely and only when needed (Thread.getAllStackTraces, ThreadMXBean.dumpAllThreads and jstack all stop the JVM), or read one thread's stack (Thread.getStackTrace) instead of all." + tool
	}
	switch op.Name {
	case "HeapDumper", "GC_HeapInspection", "HeapWalkOperation", "HeapIterateOperation":
		return "Heap dumps and class histograms stop the JVM for a walk of the whole heap: never run them on a schedule in production (jmap, jcmd GC.heap_dump and GC.class_histogram, HotSpotDiagnosticMXBean.dumpHeap); JFR's jdk.OldObjectSample (dumped with path-to-gc-roots=true) finds leaks without stopping the JVM." + tool
	case "RevokeBias", "BulkRevokeBias", "BiasedLockingRevocation", "EnableBiasedLocking":
		return "Biased locks are revoked at safepoints when another thread takes a lock biased to its first owner: run with -XX:-UseBiasedLocking (the default from JDK 15, and the flag is gone in JDK 18), or move to JDK 17 or later." + jdkNote(jdk, 15)
	case "Deoptimize", "HandshakeAllThreads", "ICBufferFull", "Cleanup":
		return "The JIT's housekeeping: deoptimization follows class loading or redefinition that invalidates compiled code (late class loading, agents retransforming classes); load classes at start-up and avoid runtime instrumentation in steady state." + tool
	case "RedefineClasses", "RetransformClasses", "ChangeBreakpoints":
		return "Classes are redefined at runtime (an instrumenting agent, a debugger, hot reload): instrument at start-up, and keep debuggers and hot reload out of production." + tool
	}
	return fmt.Sprintf("%s stops the JVM at a safepoint: find what asks for it (%s) and make it rarer.%s", op.Name, callers(op), tool)
}

// callers names the threads that asked for an operation.
func callers(op jfr.VMOperation) string {
	if len(op.Callers) == 0 {
		return "an unnamed thread"
	}
	return strings.Join(op.Callers, ", ")
}

// jdkNote says the JVM is older than the release a prescription needs.
func jdkNote(jdk, needs int) string {
	if jdk > 0 && jdk < needs {
		return fmt.Sprintf(" This JVM is JDK %d.", jdk)
	}
	return ""
}

const threadDumpExample = `// a watchdog thread
while (running) { log(Thread.getAllStackTraces()); Thread.sleep(50); }
->
// one thread's stack, only when it is stuck
if (stuckFor(worker) > Duration.ofSeconds(5)) log(worker.getStackTrace());`

func isThreadDump(op string) bool {
	switch op {
	case "ThreadDump", "PrintThreads", "GetAllStackTraces", "GetThreadListStackTraces", "FindDeadlocks", "ThreadsSuspendJVMTI":
		return true
	}
	return false
}

// byFunction merges the sites of one function (the sampled line moves
// within a loop), the longest and most seen first, leaving out the
// recorder's own thread: JFR's periodic events run in it.
func byFunction(sites []jfr.Site) []jfr.Site {
	var out []jfr.Site
	at := map[string]int{}
	for _, s := range sites {
		if strings.HasPrefix(s.Function, "jdk.jfr.") {
			continue
		}
		if i, ok := at[s.Function]; ok {
			out[i].Count += s.Count
			out[i].Time += s.Time
			continue
		}
		at[s.Function] = len(out)
		out = append(out, s)
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Time != out[j].Time {
			return out[i].Time > out[j].Time
		}
		return out[i].Count > out[j].Count
	})
	return out
}

// collector names the young collector, for the prescription.
func collector(s *jfr.Summary) string {
	switch s.GC.Young {
	case "DefNew":
		return "Serial"
	case "PSYoungGen":
		return "Parallel"
	case "":
		return "configured"
	}
	return s.GC.Young
}
