// Package jvm001 detects exceptions created on the hot path of a JVM
// service (finding class exception-overhead).
package jvm001

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/perfdoctor/perfdoctor/facts"
	"github.com/perfdoctor/perfdoctor/facts/frames"

	"github.com/perfdoctor/perfdoctor/evidence"
	"github.com/perfdoctor/perfdoctor/internal/human"
	"github.com/perfdoctor/perfdoctor/rules"
)

// Rule is JVM001.
var Rule = &rules.Rule{
	ID:    "JVM001",
	Class: "exception-overhead",
	Doc: rules.Doc{
		Title: "Exceptions are created on the hot path",
		Text: `Creating a Throwable walks the thread's stack to fill in its stack trace
(Throwable.fillInStackTrace), which costs microseconds for a shallow stack and
tens of microseconds under a deep framework stack. Exceptions used for
control flow, or thrown and swallowed on every request, pay that per request.
Most of the walk runs inside the JVM itself, where JFR's execution sampler
does not look: the sampled Java frames understate the cost, so from JFR alone
the rule also weighs how many exceptions were created. async-profiler
(collect --jvm) samples the walk itself and measures the cost directly.`,
		Evidence: `CPU share of samples under java.lang.Throwable.fillInStackTrace or a
Throwable constructor (also from folded stacks of async-profiler or perf,
which see the VM's own frames), and from a JFR recording the number of
Throwables created per minute (jdk.ExceptionStatistics). Since the sampler
misses the stack walk, the rule also estimates its cost as 2 µs per exception
(a shallow stack; deep stacks cost more) against the JVM's CPU time
(jdk.CPULoad) less that of its JIT compiler, attach listener and JFR threads
(jdk.ThreadCPULoad: warm-up and the recording's own cost, 60% of casebook
E5's JVM CPU on a busy machine), and takes the larger estimate. When async-profiler took the
samples (collect --jvm; the JVM summary names it), they hold the VM's own
frames (JVM_FillInStackTrace, java_lang_Throwable::fill_in_stack_trace) and
the measured share is used alone, the estimate shown beside it. Throwables a
logger creates to find each record's caller (logback's caller data, log4j's
location, java.util.logging's inferCaller) are never thrown and are the
logging's cost (LIB008): they are left out of the share, and where they are
most of the Throwable frames and the rest under 3%, the throw count they
inflate is not reported. Reports from 3% of CPU, or
from 10,000 exceptions a minute (a health check, graded low when the
estimated cost is small). Throw sites come from jdk.JavaExceptionThrow
(collect --jfr-exceptions) when recorded, else from the sampled stacks.`,
		Fix: `Do not throw on expected paths: validate before parsing (a regex or
character check before Integer.parseInt), return Optional or a result object
instead of throwing "not found", and look up rather than catch (map.get, not
a caught NoSuchElementException). Where a throw is unavoidable and the stack
trace is never read, reuse a preallocated exception or create it with
writableStackTrace=false (the four-argument Throwable constructor) so no
stack is walked.`,
		Before: `try {
    return Integer.parseInt(header);   // throws for every request without the header
} catch (NumberFormatException e) {
    return DEFAULT;
}`,
		After: `if (header == null || header.isEmpty() || !isDigits(header)) return DEFAULT;
return Integer.parseInt(header);`,
		Caveats: caveat,
		Since:   "0.2",
		Refs: []string{
			"https://shipilev.net/blog/2014/exceptional-performance/",
			"https://docs.oracle.com/en/java/javase/17/docs/api/java.base/java/lang/Throwable.html#%3Cinit%3E(java.lang.String,java.lang.Throwable,boolean,boolean)",
		},
	},
	Needs: []rules.Input{rules.CPU},
	Uses:  []rules.Input{rules.JVM},
	Facts: []facts.Key{facts.CPUStacks, facts.SystemFrames},
	Check: check,
}

// MeasuredFact names the share measured from a profiler's samples.
const MeasuredFact = "CPU creating exceptions, VM stack walk included"

const caveat = "Exceptions that signal real failures must stay; the cost is in creating them on paths that succeed or expect the failure."

var (
	// Frames is the cost of creating a Throwable as profilers name it: the
	// Java frames, and the VM's own frames when a profiler sees them.
	Frames = evidence.FuncPrefix(
		"java.lang.Throwable.fillInStackTrace", "java.lang.Throwable.<init>",
		"java/lang/Throwable.fillInStackTrace", "java/lang/Throwable.<init>",
		"JVM_FillInStackTrace", "java_lang_Throwable::fill_in_stack_trace",
	)
	constructor = func(fn string) bool { return strings.HasSuffix(fn, ".<init>") }
)

const (
	minShare     = 0.03
	minPerMinute = 10_000
	// costPerException is a shallow stack's fillInStackTrace and
	// construction, a lower bound (measured 1.5-3 µs on current JDKs).
	costPerException = 2 * time.Microsecond
	recoverable      = 0.9 // exceptions avoided cost nothing; a few real ones stay
)

func check(pass *rules.Pass) error {
	ev := pass.Evidence
	var cpuShare float64
	cpu := facts.Get(pass.Facts, facts.CPUStacks)
	if cpu.Share(Frames) > 0 && samples(ev) < rules.MinCPUSamples {
		cpu = nil // too few samples to weigh the frames; the throw rate still counts
	}
	// A logger looking up its caller creates a Throwable per record and
	// never throws it: that is the logging's cost (LIB008), and "do not
	// throw on expected paths" is not its fix.
	var created func(evidence.Sample) bool
	var loggerShare float64
	if cpu != nil {
		inFrames, lookup := cpu.Has(Frames), cpu.Has(frames.LogCallerLookup)
		created = func(s evidence.Sample) bool { return inFrames(s) && !lookup(s) }
		cpuShare = cpu.ShareWhere(created)
		loggerShare = cpu.ShareWhere(func(s evidence.Sample) bool { return inFrames(s) && lookup(s) })
	}
	perMinute, haveRate := ev.JVM.ExceptionsPerMinute()
	estShare := -1.0
	if haveRate {
		if cpuSec := jvmCPUPerSecond(ev); cpuSec > 0 {
			estShare = perMinute / 60 * costPerException.Seconds() / cpuSec
		}
	}
	// async-profiler's samples see the stack walk inside the VM, so they
	// measure the cost; JFR's miss it, so the throw rate bounds it too.
	measured := cpu != nil && ev.JVM != nil && ev.JVM.Profiler != ""
	share := max(cpuShare, estShare)
	if measured {
		share = cpuShare
	}
	if share < minShare && perMinute < minPerMinute {
		return nil
	}
	// The count includes the logger's Throwables; where the samples show
	// them to be most of the creating and the rest small, they explain it.
	if measured && cpuShare < minShare && loggerShare > cpuShare {
		return nil
	}
	impact := share * recoverable
	basis := "share of CPU creating exceptions (sampled Throwable frames); avoiding them recovers about 90% of it"
	switch {
	case measured:
		basis = fmt.Sprintf("share of CPU creating exceptions, measured from %s samples, which include the stack walk inside the VM; avoiding them recovers about 90%% of it", ev.JVM.Profiler)
	case estShare > cpuShare:
		basis = fmt.Sprintf("%s exceptions a second at an estimated %s each (a shallow stack; JFR's sampler does not see the stack walk inside the VM), against the JVM's CPU time; avoiding them recovers about 90%% of it",
			human.Number(perMinute/60), costPerException)
	}
	f := rules.Finding{
		Severity:    rules.SeverityFor(impact),
		Impact:      impact,
		Resource:    "cpu",
		ImpactBasis: basis,
		Fix:         pass.Rule.Doc.Fix,
		Example:     pass.Rule.Doc.Before + "\n->\n" + pass.Rule.Doc.After,
		Caveats:     []string{caveat},
	}
	if f.Severity < rules.Low {
		f.Severity = rules.Low // over 10k a minute is worth a look whatever the estimate
	}
	if haveRate {
		f.Summary = fmt.Sprintf("%s exceptions created per minute", human.Number(perMinute))
		f.Evidence = append(f.Evidence, rules.Count("exceptions created per minute (jdk.ExceptionStatistics)", perMinute, "/min"))
	} else {
		f.Summary = "Exceptions are created on the hot path"
	}
	f.Summary += fmt.Sprintf(": about %s of CPU", human.Percent(share))
	if measured {
		f.Evidence = append(f.Evidence, rules.Share(MeasuredFact, cpuShare))
		f.Frames = cpu.Matched(Frames, 8)
	} else if cpu != nil {
		f.Evidence = append(f.Evidence, rules.Share("sampled CPU creating exceptions (Throwable frames)", cpuShare))
		f.Frames = cpu.Matched(Frames, 8)
	}
	switch {
	case estShare >= 0 && measured:
		f.Evidence = append(f.Evidence, rules.Share(fmt.Sprintf("estimate at %s per exception, not used: measured instead", costPerException), estShare))
	case estShare >= 0:
		f.Evidence = append(f.Evidence, rules.Share(fmt.Sprintf("estimated CPU at %s per exception", costPerException), estShare))
	}
	if !measured && cpu != nil && cpuShare > 0 && estShare > cpuShare*2 {
		f.Caveats = append(f.Caveats, "The sampled Throwable frames show less than the throw rate implies: JFR does not sample threads while the VM walks their stacks. perfdoctor collect --jvm (async-profiler) measures the VM's share.")
	}

	// Where: the throw sites JFR recorded, else the code creating the
	// exceptions in the sampled stacks.
	sites, classes := throwSites(ev)
	if len(sites) == 0 && cpu != nil {
		system := facts.Get(pass.Facts, facts.SystemFrames) // the VM's and the kernel's frames under the Java code
		caller := cpu.CallerOf(Frames, func(fn string) bool { return rules.IsApplication(fn) && !constructor(fn) && !system(fn) })
		sites = cpu.TopSites(5, func(s evidence.Sample) *evidence.Frame {
			if !created(s) {
				return nil
			}
			return caller(s)
		})
	}
	f.Locations = rules.Locations(sites, "code creating exceptions")
	if len(classes) > 0 {
		f.Evidence = append(f.Evidence, rules.Text("exception classes thrown (jdk.JavaExceptionThrow)", strings.Join(classes, ", ")))
		f.Summary += ", mostly " + classes[0]
	}
	if len(sites) > 0 {
		f.Summary += " (in " + rules.ShortFunc(sites[0].Func) + ")"
	} else if ev.JVM != nil && ev.JVM.ThrowEvents == 0 {
		f.Caveats = append(f.Caveats, "The recording has no throw events: perfdoctor collect --jfr-exceptions records where exceptions are thrown.")
	}
	if loggerShare > 0 {
		f.Evidence = append(f.Evidence, rules.Share("Throwables a logger creates to find its caller, not counted (logging-cost)", loggerShare))
		if loggerShare >= cpuShare {
			f.Caveats = append(f.Caveats, fmt.Sprintf("Most Throwable frames (%s of CPU) are a logger finding each record's caller for its pattern; they are never thrown, "+
				"and the exception count includes them: see the logging finding.", human.Percent(loggerShare)))
		}
	}
	if created == nil { // too few samples to weigh: the frames, as they are
		created = facts.Get(pass.Facts, facts.CPUStacks).Has(Frames)
	}
	f.Claim = &rules.Claim{Level: rules.LevelCode, CPU: created}
	pass.Report(f)
	return nil
}

// samples counts the CPU profile's samples.
func samples(ev *evidence.Evidence) int64 {
	var n int64
	for _, s := range ev.Profile(evidence.CPU).Sample {
		if len(s.Value) > 0 {
			n += s.Value[0]
		}
	}
	return n
}

// notServing are the JVM's threads whose CPU in the window is not the
// service's work: the JIT compilers (a warm-up cost that ends), the attach
// listener and JFR's threads (the recording's own cost). On a busy machine
// they took 60% of E5's JVM CPU during a 6 s recording after a 3 s warm-up.
var notServing = []string{"C1 CompilerThread", "C2 CompilerThread", "Attach Listener", "JFR "}

// jvmCPUPerSecond is the CPU seconds per second the JVM spent serving over
// the window: jdk.CPULoad less the threads of notServing (jdk.ThreadCPULoad)
// when recorded, else the CPU profile's samples.
func jvmCPUPerSecond(ev *evidence.Evidence) float64 {
	if s := ev.JVM; s != nil && s.JVMCPU > 0 && s.HWThreads > 0 {
		cpu := s.JVMCPU
		for _, t := range s.Threads {
			if slices.ContainsFunc(notServing, func(p string) bool { return strings.HasPrefix(t.Name, p) }) {
				cpu -= t.User + t.System
			}
		}
		return max(cpu, s.JVMCPU/10) * float64(s.HWThreads)
	}
	p, w := ev.Profile(evidence.CPU), ev.Window()
	if p == nil || w <= 0 {
		return 0
	}
	var ns int64
	for _, s := range p.Sample {
		if len(s.Value) > 1 {
			ns += s.Value[1]
		}
	}
	return float64(ns) / float64(w)
}

// throwSites reads the exceptions profile: the code outside the JDK that
// threw or caused the throw, and the exception classes by count.
func throwSites(ev *evidence.Evidence) ([]evidence.Site, []string) {
	p := ev.Profile(evidence.Exceptions)
	st := evidence.NewStacks(p, "exceptions")
	if st == nil || len(st.Samples) == 0 {
		return nil, nil
	}
	first := st.First(func(fn string) bool { return rules.IsApplication(fn) && !constructor(fn) })
	sites := st.TopSites(5, func(s evidence.Sample) *evidence.Frame { return first(s) })
	count := map[string]int64{}
	for _, s := range p.Sample {
		for _, c := range s.Label["class"] {
			count[c] += s.Value[0]
		}
	}
	classes := make([]string, 0, len(count))
	for c := range count {
		classes = append(classes, c)
	}
	sort.Slice(classes, func(i, j int) bool {
		if count[classes[i]] != count[classes[j]] {
			return count[classes[i]] > count[classes[j]]
		}
		return classes[i] < classes[j]
	})
	return sites, classes[:min(len(classes), 3)]
}
