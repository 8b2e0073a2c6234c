// Package jvm010 detects Java threads queueing on a contended monitor or
// lock (finding class jvm-lock-contention).
package jvm010

import (
	"fmt"
	"time"

	"github.com/perfdoctor/perfdoctor/formats/jfr"
	"github.com/perfdoctor/perfdoctor/internal/human"
	"github.com/perfdoctor/perfdoctor/rules"
	"github.com/perfdoctor/perfdoctor/rules/jvmthreads"
)

// Rule is JVM010.
var Rule = &rules.Rule{
	ID:    "JVM010",
	Class: "jvm-lock-contention",
	Doc: rules.Doc{
		Title: "Java threads queue on a contended monitor or lock",
		Text: `A synchronized block or a java.util.concurrent lock that every request takes
serialises the threads: while one holds it the others block, the service
cannot use more CPUs however many threads it has, and the wait adds straight
to request latency. The waiting burns no CPU, so a CPU profile misses it;
holding a lock across I/O (a remote call, a disk write, a sleep) makes it
far worse.`,
		Evidence: `jdk.JavaMonitorEnter (a thread blocked entering a synchronized block) and
jdk.ThreadPark on a ReentrantLock, ReentrantReadWriteLock or StampedLock
(a thread parked acquiring it), by lock class and site: the waits of 10 ms
or more that the profile settings record (20 ms under the default settings).
Waits of idle pool workers for their queue's lock and waits with no frame
of the service's code (an executor's own bookkeeping, the JFR recorder) are
left out. The blocked time is normalised to a wait share: blocked
time / (span × CPUs), the average number of threads queued on locks per
CPU, as LOCK001 does for Go. Reports from 0.05 (low), 0.15 (medium), 0.40
(high). Measured here, on 2 CPUs at a load average near 20 from other
work: healthy recordings wait 0 to 0.03 (the unlocked fixture, casebook E4
and E5 at 13-22k requests a second, J3), 0.05 (J2 fixed, which still books
under the monitor, preempted while holding it) and 0.11 (J1 fixed, the HTTP
client's own locks); casebook J2 bad (a ledger making its audit call while
holding the monitor) 0.96-1.32; the locks fixture (8 threads sleeping 5 ms
under one monitor and one ReentrantLock) 2.6. The
finding names the lock's class and the code that waits for it, which for a
monitor is the synchronized method or block that holds it too.`,
		Fix: `Hold the lock for less, and for nothing slow: move I/O, logging, remote
calls and allocation-heavy work out of the critical section (compute outside,
then publish under the lock); split one lock into several (lock striping, a
lock per key or shard); use the concurrent structures instead of a lock
around a plain one (ConcurrentHashMap and its compute methods, LongAdder for
counters, JDK 8 and later); make read-mostly data copy-on-write or guard it
with a ReadWriteLock or a StampedLock's optimistic reads. On JDK 21 to 23
with virtual threads a synchronized block that blocks also pins its carrier
(see JVM009): use a ReentrantLock there, or JDK 24 and later.`,
		Before: `synchronized (this) {            // every request, one monitor
    balance += amount;
    journal.write(entry);        // I/O while the others wait
}`,
		After: `journal.write(entry);            // outside the lock
synchronized (this) { balance += amount; }   // or a LongAdder / AtomicLong`,
		Caveats: caveat,
		Since:   "0.3",
		Refs: []string{
			"https://docs.oracle.com/en/java/javase/21/docs/api/jdk.jfr/jdk/jfr/consumer/package-summary.html",
			"https://docs.oracle.com/en/java/javase/21/docs/api/java.base/java/util/concurrent/locks/package-summary.html",
		},
	},
	Needs: []rules.Input{rules.JVM},
	Check: check,
}

const caveat = "Waits shorter than the recording's threshold (10 ms under the profile settings) are not recorded, so the share is a lower bound: many short waits on a hot lock show as less than they cost."

const (
	lowShare    = 0.05
	mediumShare = 0.15
	highShare   = 0.40
)

// serviceWait reports whether a wait has a frame of the service's own code
// on its stack: waits wholly inside the JDK (an executor's workers exiting
// through its main lock, the JFR recorder's own) are not a lock the
// service can change.
func serviceWait(w jfr.WaitSite) bool {
	for _, f := range w.Stack {
		if rules.IsApplication(f.Func) {
			return true
		}
	}
	return false
}

func check(pass *rules.Pass) error {
	s := pass.Evidence.JVM
	span := s.Span()
	if span <= 0 {
		return nil
	}
	var waits []jfr.WaitSite
	var total time.Duration
	count := 0
	for _, w := range s.Threading.LockWaits {
		if !serviceWait(w) {
			continue
		}
		waits = append(waits, w)
		total += w.Total
		count += w.Count
	}
	cpus := jvmthreads.CPUs(s, 1)
	share := total.Seconds() / (span.Seconds() * float64(cpus))
	if share < lowShare || len(waits) == 0 {
		return nil
	}
	top := waits[0]
	kind := "the monitor of " + top.Class
	if top.Kind == "lock" {
		kind = top.Class
	}
	f := rules.Finding{
		Severity:    rules.Grade(share, mediumShare, highShare),
		Impact:      min(share, 1),
		Resource:    "latency",
		ImpactBasis: fmt.Sprintf("threads blocked on locks per CPU: %s blocked over %s × %d CPUs", human.RoundDuration(total), human.RoundDuration(span), cpus),
		Summary: fmt.Sprintf("Threads waited %s for locks over %s (%.2f threads blocked per CPU), mostly for %s in %s",
			human.RoundDuration(total), human.RoundDuration(span), share, kind, jvmthreads.SiteName(top.Stack)),
		Evidence: []rules.Fact{
			rules.Count("threads blocked on locks per CPU", share, ""),
			rules.Duration("time blocked on locks", total),
			rules.Count("contended waits of 10 ms or more", float64(count), ""),
			rules.Text("most contended lock", top.Class),
			rules.Count("threads waiting for it", float64(top.Threads), ""),
			rules.Duration("longest wait for it", top.Max),
		},
		Fix:     pass.Rule.Doc.Fix,
		Example: pass.Rule.Doc.Before + "\n->\n" + pass.Rule.Doc.After,
		Caveats: []string{caveat},
	}
	f.Locations = jvmthreads.Locations(waits, total, 5, func(w jfr.WaitSite) string { return "waits for " + w.Class })
	// A synchronized method or block holds its own monitor; a
	// java.util.concurrent lock is, as its documentation's idiom goes,
	// held by the method that called lock() until its finally block
	// (logback's OutputStreamAppender.writeBytes), so that method holds it
	// too.
	var held []string
	for _, w := range waits {
		if site, ok := jvmthreads.Site(w.Stack); ok {
			held = append(held, site.Func)
		}
	}
	// A cost found inside the critical section (a hot loop, an fsync) is
	// why the others wait.
	f.Claim = &rules.Claim{Level: rules.LevelCode, HeldIn: held}
	pass.Report(f)
	return nil
}
