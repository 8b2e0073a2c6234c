// Package jvm014 reads the CPU load over a JVM's recording: the JVM
// saturating the CPUs, other processes starving it, or bursts (finding
// class jvm-cpu-saturation).
package jvm014

import (
	"fmt"
	"sort"

	"github.com/perfdoctor/perfdoctor/formats/jfr"
	"github.com/perfdoctor/perfdoctor/internal/human"
	"github.com/perfdoctor/perfdoctor/rules"
	"github.com/perfdoctor/perfdoctor/rules/jvmthreads"
)

// Rule is JVM014.
var Rule = &rules.Rule{
	ID:    "JVM014",
	Class: "jvm-cpu-saturation",
	Doc: rules.Doc{
		Title: "The CPUs are saturated, by the JVM or by other processes, or in bursts",
		Text: `A JVM that keeps every CPU busy has no headroom: requests queue for a CPU,
latency grows with load, and the garbage collector and the JIT compete with
the service's own threads. When the CPUs are saturated by other processes
instead, the JVM is starved: its threads wait for a CPU the host gives
elsewhere, which no profile of its code shows. Short bursts to full load
between idle stretches do the same for the requests that arrive during them,
and in a container they spend the CPU quota early.`,
		Evidence: `jdk.CPULoad, one reading a second: the machine's total against the JVM's
user and system time, as fractions of all CPUs. Saturated: the JVM at 85% of
the CPUs or more in at least half the readings (medium); when another rule
names a CPU cost of medium or more, this is its symptom and ranks under it.
Starved: the machine at 90% or more while other processes take at least half
of the CPUs and the JVM itself works (a quarter of a CPU or more; an idle
JVM on a busy host needs nothing), in at least half the readings (low: it is the host's problem,
not the service's, as SCHED003 grades it for Go). Bursts: the JVM's highest
reading at 85% or more while its median is under a third of that (low).
Needs three readings. Measured here on 2 CPUs shared with other work (a
load average near 20): the fixtures' JVMs, idle or starved, read 1-30% while
the machine read 99-100%; casebook E4 and E5 under load used 23-29% while
other processes took 71-77% (starved, low); the switches fixture (a JVM at
half a CPU among others taking the rest) is starved. The saturated and
bursty shapes are tested on readings built in the test: this machine's
other work never left the CPUs to one JVM.`,
		Fix: `Saturated: cut the CPU each request costs (the CPU findings name where),
then add CPUs or replicas, and bound concurrency so overload is refused
rather than queued. Starved: move the other work off the host, or reserve
the JVM's CPUs (container CPU requests, cpusets, a larger instance). Bursts:
spread the work that arrives together (scheduled jobs, batch flushes, cache
refreshes on a timer) and give a container a CPU limit above its bursts or
none; JDK 10 and later size their GC and compiler threads from the
container's CPU limit (-XX:ActiveProcessorCount overrides it).`,
		Caveats: "The machine's total covers the host or the container as the JVM sees it; readings of a second average out shorter bursts.",
		Since:   "0.3",
		Refs: []string{
			"https://docs.oracle.com/en/java/javase/21/docs/api/jdk.management/com/sun/management/OperatingSystemMXBean.html#getCpuLoad()",
		},
	},
	Needs: []rules.Input{rules.JVM},
	// Saturation is usually the symptom of a CPU cost another rule names;
	// running after the others lets it rank under its cause.
	Fallback: true,
	Check:    check,
}

const (
	minReadings    = 3
	saturated      = 0.85
	machineBusy    = 0.90
	othersStarve   = 0.50
	mostOfTheTime  = 0.5
	burstOverMedia = 3
	// working is the JVM's CPU use (in CPUs) from which it is starved by
	// a busy host rather than idle on it.
	working = 0.25
)

func check(pass *rules.Pass) error {
	s := pass.Evidence.JVM
	loads := s.Threading.CPULoad
	if len(loads) < minReadings {
		return nil
	}
	cpus := jvmthreads.CPUs(s, 1)
	var sat, starved int
	jvm := make([]float64, len(loads))
	for i, l := range loads {
		jvm[i] = l.JVMUser + l.JVMSystem
		if jvm[i] >= saturated {
			sat++
		}
		if l.Machine >= machineBusy && l.Machine-jvm[i] >= othersStarve && jvm[i]*float64(cpus) >= working {
			starved++
		}
	}
	n := float64(len(loads))
	peak, median := quantile(jvm, 1), quantile(jvm, 0.5)
	evidence := []rules.Fact{
		rules.Share("JVM CPU, median reading (jdk.CPULoad)", median),
		rules.Share("JVM CPU, highest reading", peak),
		rules.Share("machine CPU, mean", s.MachineCPU),
		rules.Count("readings", n, ""),
	}
	switch {
	case float64(sat)/n >= mostOfTheTime:
		f := rules.Finding{
			Severity:    rules.Medium,
			Impact:      0,
			Resource:    "cpu",
			ImpactBasis: "not a cost of its own: the CPUs have no headroom, and what runs on them is the other findings' cost",
			Summary:     fmt.Sprintf("The JVM kept the CPUs saturated: %s or more of them in %d of %d readings (median %s)", human.Percent(saturated), sat, len(loads), human.Percent(median)),
			Evidence:    append(evidence, rules.Share("readings saturated", float64(sat)/n), systemShare(loads)),
			Fix:         pass.Rule.Doc.Fix,
			Caveats:     []string{pass.Rule.Doc.Caveats},
		}
		if cause := cpuCause(pass.Earlier); cause != nil {
			f.CausedBy = cause.ID
			f.CauseReason = fmt.Sprintf("%s (%s) names the CPU cost that fills the CPUs", cause.ID, cause.Class)
		}
		pass.Report(f)
	case float64(starved)/n >= mostOfTheTime:
		others := 0.0
		for i, l := range loads {
			others += l.Machine - jvm[i]
		}
		others /= n
		pass.Report(rules.Finding{
			Severity:    rules.Low,
			Impact:      0,
			Resource:    "cpu",
			ImpactBasis: "not the service's cost: other processes took the CPUs it would have used",
			Summary:     fmt.Sprintf("Other processes kept the host's CPUs saturated: they used %s of them while the JVM used %s (%d of %d readings at %s busy or more)", human.Percent(others), human.Percent(s.JVMCPU), starved, len(loads), human.Percent(machineBusy)),
			Evidence:    append(evidence, rules.Share("other processes' CPU, mean", others)),
			Fix:         pass.Rule.Doc.Fix,
			Caveats:     []string{pass.Rule.Doc.Caveats},
		})
	case peak >= saturated && median*burstOverMedia <= peak:
		pass.Report(rules.Finding{
			Severity:    rules.Low,
			Impact:      0,
			Resource:    "cpu",
			ImpactBasis: "not measurable from one-second readings: requests that arrive during a burst wait for a CPU",
			Summary:     fmt.Sprintf("The JVM's CPU load came in bursts: up to %s of the CPUs against a median of %s", human.Percent(peak), human.Percent(median)),
			Evidence:    evidence,
			Fix:         pass.Rule.Doc.Fix,
			Caveats:     []string{pass.Rule.Doc.Caveats},
		})
	}
	return nil
}

// systemShare is the kernel's part of the JVM's CPU time.
func systemShare(loads []jfr.CPULoad) rules.Fact {
	var user, sys float64
	for _, l := range loads {
		user += l.JVMUser
		sys += l.JVMSystem
	}
	share := 0.0
	if user+sys > 0 {
		share = sys / (user + sys)
	}
	return rules.Share("JVM CPU in the kernel (system time)", share)
}

// cpuCause is the most severe earlier finding with a CPU cost of medium or
// more, the likeliest reason the CPUs are full.
func cpuCause(earlier []rules.Finding) *rules.Finding {
	var best *rules.Finding
	for i := range earlier {
		f := &earlier[i]
		if f.Resource != "cpu" || f.Severity < rules.Medium || f.CausedBy != "" {
			continue
		}
		if best == nil || f.Severity > best.Severity || f.Severity == best.Severity && f.Impact > best.Impact {
			best = f
		}
	}
	return best
}

// quantile is the q-quantile of xs (nearest rank).
func quantile(xs []float64, q float64) float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	i := int(q*float64(len(s)-1) + 0.5)
	return s[min(max(i, 0), len(s)-1)]
}
