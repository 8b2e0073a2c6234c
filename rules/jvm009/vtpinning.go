// Package jvm009 detects virtual threads pinned to their carrier while
// they block (finding class virtual-thread-pinning).
package jvm009

import (
	"fmt"
	"strings"
	"time"

	"github.com/perfdoctor/perfdoctor/formats/jfr"
	"github.com/perfdoctor/perfdoctor/internal/human"
	"github.com/perfdoctor/perfdoctor/rules"
	"github.com/perfdoctor/perfdoctor/rules/jvmthreads"
)

// Rule is JVM009.
var Rule = &rules.Rule{
	ID:    "JVM009",
	Class: "virtual-thread-pinning",
	Doc: rules.Doc{
		Title: "Virtual threads block while pinned to their carrier",
		Text: `A virtual thread that blocks normally unmounts and frees its carrier (one of
as many platform threads as CPUs) for another virtual thread. A pinned one
cannot: it holds the carrier for as long as it blocks, so a few pinned waits
take all carriers and every other virtual thread queues, however many there
are. On JDK 21 to 23 a virtual thread is pinned inside synchronized (and in
Object.wait); from JDK 24 (JEP 491) only while a native frame is on its stack
(a JNI or foreign-function call that calls back into Java) or while it runs
or waits for a class initializer.`,
		Evidence: `jdk.VirtualThreadPinned (JDK 21 and later; the profile settings record
pins of 20 ms or more, the default settings none), by stack: the time
pinned over the recording against the carriers' time (the span × the CPUs,
the default carrier parallelism). Any recorded pin is reported (low); from
5% of the carriers' time medium, from 25% high: a quarter of the carriers
held by blocked threads is a quarter of the scheduler gone. Measured here:
healthy recordings (the unpinned fixture, casebook J1 fixed, J2, J3, E4 and
E5, bad and fixed) hold no pin at all; casebook J1 bad (25 ms calls inside a
native callback, 2 CPUs, JDK 25) holds its carriers pinned 95-96% of the
time, the pinned fixture 67-75%. The finding names the
blocking call's first frame in the service's code, the pinned reason
(JDK 24 and later) and the prescription for the JDK that ran it.`,
		Fix: `On JDK 21 to 23: upgrade to JDK 24 or later, where synchronized and
Object.wait no longer pin (JEP 491); until then replace the synchronized block
around the blocking call with a java.util.concurrent.locks.ReentrantLock (and
Object.wait with a Condition). On JDK 24 and later (the pin is a native frame
or a class initializer): do not block inside a callback from native code or
inside a static initializer; do the blocking work (I/O, a lock, a sleep)
before calling into native code and pass its result in, initialise eagerly at
start-up, or run that call on a bounded pool of platform threads.`,
		Before: `// JDK 21-23: pins while waiting for the database
synchronized (cache) { v = db.load(key); cache.put(key, v); }`,
		After: `lock.lock();   // ReentrantLock: unmounts while it waits
try { v = db.load(key); cache.put(key, v); } finally { lock.unlock(); }`,
		Caveats: caveat,
		Since:   "0.3",
		Refs: []string{
			"https://openjdk.org/jeps/491",
			"https://docs.oracle.com/en/java/javase/21/core/virtual-threads.html#GUID-704A716D-0662-4BC7-8C7F-66EE74B1EDAD",
		},
	},
	Needs: []rules.Input{rules.JVM},
	Check: check,
}

const caveat = "Pins shorter than the recording's threshold (20 ms under the profile settings) are not recorded, so the share is a lower bound; the default settings record none. Carriers are assumed to number the CPUs (jdk.virtualThreadScheduler.parallelism changes it)."

const (
	mediumShare = 0.05
	highShare   = 0.25
)

func check(pass *rules.Pass) error {
	s := pass.Evidence.JVM
	pinned := s.Threading.Pinned
	if len(pinned) == 0 {
		return nil
	}
	var total time.Duration
	count := 0
	for _, p := range pinned {
		total += p.Total
		count += p.Count
	}
	carriers := jvmthreads.CPUs(s, 1)
	span := s.Span()
	share := 0.0
	if span > 0 {
		share = total.Seconds() / (span.Seconds() * float64(carriers))
	}
	top := pinned[0]
	feature := jvmthreads.Feature(s)
	f := rules.Finding{
		Severity:    rules.Low,
		Impact:      min(share, 1),
		Resource:    "latency",
		ImpactBasis: fmt.Sprintf("share of the carriers' time (%s × %d CPUs) held by pinned virtual threads while they blocked; each such wait queues other virtual threads", human.RoundDuration(span), carriers),
		Summary: fmt.Sprintf("Virtual threads blocked while pinned to their carriers for %s over %d waits (%s of the carriers' time), mostly in %s",
			human.RoundDuration(total), count, human.Percent(share), jvmthreads.SiteName(top.Stack)),
		Evidence: []rules.Fact{
			rules.Count("pinned waits (jdk.VirtualThreadPinned)", float64(count), ""),
			rules.Duration("time pinned", total),
			rules.Share("carriers' time pinned", share),
			rules.Duration("longest pinned wait", top.Max),
		},
		Fix:     prescription(feature, top, pass.Rule.Doc.Fix),
		Example: pass.Rule.Doc.Before + "\n->\n" + pass.Rule.Doc.After,
		Caveats: []string{caveat},
	}
	switch {
	case share >= highShare:
		f.Severity = rules.High
	case share >= mediumShare:
		f.Severity = rules.Medium
	}
	if pinnedByNative(feature, top) {
		f.Example = nativeExample
	}
	if caller, ok := nativeCaller(top.Stack); ok {
		f.Summary += ", inside a callback from native code called by " + caller
	}
	if top.Reason != "" {
		f.Summary += "; pinned reason: " + top.Reason
		f.Evidence = append(f.Evidence, rules.Text("pinned reason", top.Reason))
	}
	if top.Kind != "" {
		f.Evidence = append(f.Evidence, rules.Text("blocking operation", top.Kind))
	}
	if feature > 0 {
		f.Evidence = append(f.Evidence, rules.Count("JDK", float64(feature), ""))
	}
	f.Locations = jvmthreads.Locations(pinned, total, 5, func(jfr.WaitSite) string { return "blocking while pinned" })
	pass.Report(f)
	return nil
}

// prescription is the fix for the JDK that ran and why it pinned.
func prescription(feature int, top jfr.WaitSite, general string) string {
	switch {
	case pinnedByNative(feature, top):
		fix := "The pin comes from a native frame on the stack (a JNI or foreign-function call that calls back into Java) or a class initializer, which still pin on JDK 24 and later: do not block inside the callback or the static initializer; do the blocking work before calling into native code and pass its result in, initialise eagerly at start-up, or run that call on a bounded pool of platform threads."
		if feature > 0 && feature < 24 {
			fix += " On JDK " + fmt.Sprint(feature) + " synchronized and Object.wait pin too: upgrading to JDK 24 or later (JEP 491) removes those pins."
		}
		return fix
	case feature >= 21:
		return fmt.Sprintf("On JDK %d a virtual thread is pinned inside synchronized and Object.wait. Upgrade to JDK 24 or later, where they no longer pin (JEP 491); until then replace the synchronized block around the blocking call with a java.util.concurrent.locks.ReentrantLock, and Object.wait with a Condition.", feature)
	}
	return general
}

// nativeExample is the fix where the pin is a native frame: block before
// the native call, not inside its callback.
const nativeExample = `// the comparator blocks inside the native sort's callback
nativeSort(items, (a, b) -> Integer.compare(pricing.price(a), pricing.price(b)));
->
Map<Item, Integer> prices = pricing.prices(items);   // before the native call
nativeSort(items, (a, b) -> Integer.compare(prices.get(a), prices.get(b)));`

// pinnedByNative reports whether the pin is one JDK 24 and later keep: a
// native frame or class initializer on the stack, or any pin on those JDKs.
func pinnedByNative(feature int, top jfr.WaitSite) bool {
	_, upcall := nativeCaller(top.Stack)
	return feature >= 24 || upcall || strings.Contains(strings.ToLower(top.Reason), "native")
}

// nativeCaller is, when the stack went through native code back into Java
// (a foreign-function upcall), the service's frame that made the native
// call; ok is false without such a boundary. JNI callbacks leave no frame
// of their own in Java stacks.
func nativeCaller(stack []jfr.StackFrame) (string, bool) {
	for i, f := range stack {
		if strings.HasPrefix(f.Func, "jdk.internal.foreign.abi.DowncallStub") {
			return jvmthreads.SiteName(stack[i+1:]), true
		}
	}
	return "", false
}
