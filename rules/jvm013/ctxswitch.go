// Package jvm013 detects a context-switch rate high enough to cost CPU
// (finding class jvm-context-switches).
package jvm013

import (
	"fmt"
	"time"

	"github.com/perfdoctor/perfdoctor/internal/human"
	"github.com/perfdoctor/perfdoctor/rules"
	"github.com/perfdoctor/perfdoctor/rules/jvmthreads"
)

// Rule is JVM013.
var Rule = &rules.Rule{
	ID:    "JVM013",
	Class: "jvm-context-switches",
	Doc: rules.Doc{
		Title: "Threads switch on and off the CPUs at a costly rate",
		Text: `Every time a thread blocks and another is woken, the kernel switches
contexts: a few microseconds of direct cost, and more in caches and TLB
refilled afterwards. Threads that hand work to each other one item at a
time (a SynchronousQueue, a wait/notify per message), locks that park and
wake on every acquisition, and far more runnable threads than CPUs drive
the rate to hundreds of thousands a second, where the switching itself
takes a large share of the CPUs.`,
		Evidence: `The JVM's own context switches per second, from the voluntary and
involuntary switches of its threads in /proc at both ends of the window
(perfdoctor collect --jfr on the JVM's host), else the host's from
jdk.ThreadContextSwitchRate (every process; perfdoctor collect --jfr reads it
every second, the JFR settings alone every 10 s); per CPU. At an estimated 2 µs of
CPU per switch (direct cost only; a lower bound) the rate is a CPU share.
Reports from 50,000 switches a second per CPU (low, about 10% of the CPUs)
and 80,000 (medium). Measured here, on a 2-CPU machine shared with other
work: the JVM's own rate in casebook E4 and E5 at 8-27k requests a second is
16,000-33,000 per CPU, in the J cases 600-3,000; the host-wide rate on that
busy machine read 19,000-64,000 per CPU whatever the JVM did; the switches
fixture (4 pairs of threads handing a token back and forth through
SynchronousQueues, a .jfr alone, so host-wide) 105,000. Pool and lock findings of the same diagnosis
name the likely cause.`,
		Fix: `Hand work over in batches rather than one item at a time (drainTo a
list, a ring buffer with batching consumers), keep runnable threads near the
CPUs (a CPU-bound pool of about availableProcessors() threads, see JVM011),
replace a lock that parks on every acquisition with less sharing (see
JVM010), and on JDK 21 and later run blocking request work on virtual
threads, which switch in user space without a kernel context switch.`,
		Before: `SynchronousQueue<Msg> q;   // the consumer wakes for every message
while (true) handle(q.take());`,
		After: `ArrayBlockingQueue<Msg> q; List<Msg> batch = new ArrayList<>();
while (true) { batch.add(q.take()); q.drainTo(batch, 255); handleAll(batch); batch.clear(); }`,
		Caveats: "Without /proc snapshots of the JVM (a .jfr file alone) the rate is the host's, every process included: on a shared host it may be another process's. Threads that ended during the window take their switches with them.",
		Since:   "0.3",
		Refs: []string{
			"https://docs.oracle.com/en/java/javase/21/docs/api/java.base/java/util/concurrent/BlockingQueue.html#drainTo(java.util.Collection,int)",
		},
	},
	Needs: []rules.Input{rules.JVM},
	Uses:  []rules.Input{rules.System},
	Check: check,
}

const hostCaveat = "The rate is the host's (jdk.ThreadContextSwitchRate), every process included: on a shared host it may be another process's."

const (
	lowPerCPU    = 50_000
	mediumPerCPU = 80_000
	// costPerSwitch is a context switch's direct cost, a lower bound
	// (1-3 µs measured on current x86 kernels; cache refills add more).
	costPerSwitch = 2 * time.Microsecond
)

// rate is a context switch rate and what it covers.
type rate struct {
	perSecond, peak float64
	readings        int
	own             bool // the JVM's own threads, not the host's
}

// switchRate is the JVM's own rate from /proc snapshots at both ends of
// the window (perfdoctor collect --jfr takes them), else the host's from
// jdk.ThreadContextSwitchRate.
func switchRate(pass *rules.Pass) (rate, bool) {
	if d, ok := pass.Evidence.SystemDelta(); ok && d.Start.Process != nil && d.End.Process != nil && d.Seconds > 0 {
		a, b := d.Start.Process, d.End.Process
		before, after := a.VoluntaryCtxt+a.NonvoluntaryCtxt, b.VoluntaryCtxt+b.NonvoluntaryCtxt
		if a.PID == b.PID && after >= before && after > 0 {
			r := float64(after-before) / d.Seconds
			return rate{perSecond: r, peak: r, readings: 1, own: true}, true
		}
	}
	t := pass.Evidence.JVM.Threading
	if t.ContextSwitchSamples == 0 {
		return rate{}, false
	}
	return rate{perSecond: t.ContextSwitchRate, peak: t.ContextSwitchRateMax, readings: t.ContextSwitchSamples}, true
}

func check(pass *rules.Pass) error {
	s := pass.Evidence.JVM
	r, ok := switchRate(pass)
	if !ok {
		return nil
	}
	cpus := jvmthreads.CPUs(s, 1)
	perCPU := r.perSecond / float64(cpus)
	if perCPU < lowPerCPU {
		return nil
	}
	share := min(perCPU*costPerSwitch.Seconds(), 1)
	sev := rules.Low
	if perCPU >= mediumPerCPU {
		sev = rules.Medium
	}
	who, source := "The host", "context switches per second, host-wide (jdk.ThreadContextSwitchRate)"
	if r.own {
		who, source = "The JVM's threads", "context switches per second of the JVM's threads (/proc/PID/task/*/status)"
	}
	f := rules.Finding{
		Severity:    sev,
		Impact:      share,
		Resource:    "cpu",
		ImpactBasis: fmt.Sprintf("switches per second per CPU × %s each (the direct cost, a lower bound)", costPerSwitch),
		Summary: fmt.Sprintf("%s switched contexts %s times a second (%s per CPU): about %s of the CPUs at %s a switch",
			who, human.Number(r.perSecond), human.Number(perCPU), human.Percent(share), costPerSwitch),
		Evidence: []rules.Fact{
			rules.Count(source, r.perSecond, "/s"),
			rules.Count("per CPU", perCPU, "/s"),
		},
		Fix:     pass.Rule.Doc.Fix,
		Example: pass.Rule.Doc.Before + "\n->\n" + pass.Rule.Doc.After,
	}
	if !r.own {
		f.Evidence = append(f.Evidence, rules.Count("highest reading", r.peak, "/s"), rules.Count("readings", float64(r.readings), ""))
		f.Caveats = append(f.Caveats, hostCaveat)
	}
	if t := s.Threading; t.LiveMax > 0 {
		f.Evidence = append(f.Evidence, rules.Count("live threads, highest", float64(t.LiveMax), ""))
	}
	pass.Report(f)
	return nil
}
