// Package jvm017 detects a JIT code cache that is full or nearly full
// (finding class jvm-code-cache-full).
package jvm017

import (
	"fmt"
	"strings"

	"github.com/perfdoctor/perfdoctor/formats/jfr"
	"github.com/perfdoctor/perfdoctor/internal/human"
	"github.com/perfdoctor/perfdoctor/rules"
)

// Rule is JVM017.
var Rule = &rules.Rule{
	ID:    "JVM017",
	Class: "jvm-code-cache-full",
	Doc: rules.Doc{
		Title: "The JIT's code cache is full or nearly full",
		Text: `The JIT compiles hot methods into the code cache, a region of fixed size
(-XX:ReservedCodeCacheSize, 240 MB by default with tiered compilation,
split into code heaps from JDK 9). When it fills, the JVM stops compiling
("CodeCache is full. Compiler has been disabled."): methods not yet
compiled stay interpreted, ten to a hundred times slower, for the life of
the process, and code that was flushed to make room falls back to the
interpreter too. Large applications, many dynamically generated classes
(proxies, lambdas, scripting engines), or a cache sized down by hand reach
the limit.`,
		Evidence: `From a JFR recording: jdk.CodeCacheFull (the JVM found a code heap full)
and jdk.CodeCacheStatistics (each code heap's size and unallocated space,
at the start and end of every chunk). Reports a full code cache (high),
or a code heap 90% used or more (medium). The cost of a full cache is
estimated as the share of CPU samples whose top frame runs interpreted.
The healthy programs recorded here use at most 26% of the small
non-method heap (stubs and adapters) and under 2% of the method heaps,
with under 2% of samples interpreted. CodeCache.java (javac in process, 7
s) under a 2.6 MB cache filled it and ran 73% of its samples interpreted;
under the default 240 MB, 46% (javac's cold code, still warming up).`,
		Fix: `Give the code cache room: raise -XX:ReservedCodeCacheSize (for example to
its default 240m, or 512m for a very large application; the maximum is
2 GB), and leave the per-heap sizes (-XX:NonProfiledCodeHeapSize,
-XX:ProfiledCodeHeapSize) to the JVM unless one heap fills. Keep
-XX:+UseCodeCacheFlushing on (the default) so cold code is evicted. Then
look for code generated without end: proxies or classes defined per
request, scripting engines compiling per call.`,
		Before:  `java -XX:ReservedCodeCacheSize=32m -jar app.jar`,
		After:   `java -XX:ReservedCodeCacheSize=240m -jar app.jar`,
		Caveats: "Interpreted samples also come from code that simply has not warmed up yet: a recording taken just after start-up overstates the cost.",
		Since:   "0.2",
		Refs: []string{
			"https://docs.oracle.com/en/java/javase/21/vm/java-hotspot-virtual-machine-performance-enhancements.html",
			"https://openjdk.org/jeps/197",
		},
	},
	Needs: []rules.Input{rules.JVM},
	Check: check,
}

const nearlyFull = 0.9

func check(pass *rules.Pass) error {
	vm := pass.Evidence.JVM.VM
	fullest, full := fullestHeap(vm)
	if !full && fullest.Used() < nearlyFull {
		return nil
	}
	interpreted := 0.0
	if vm.Stacks.Samples > 0 {
		interpreted = float64(vm.Stacks.Interpreted) / float64(vm.Stacks.Samples)
	}
	f := rules.Finding{
		Resource: "cpu",
		Evidence: []rules.Fact{
			rules.Share(fmt.Sprintf("code heap %s used", fullest.Name), fullest.Used()),
			rules.Bytes("its size", uint64(fullest.Size)),
			rules.Count("times a code heap was full (since start)", float64(fullest.FullCount), ""),
		},
		Fix:     pass.Rule.Doc.Fix,
		Example: pass.Rule.Doc.Before + "\n->\n" + pass.Rule.Doc.After,
		Caveats: []string{pass.Rule.Doc.Caveats},
	}
	if vm.Stacks.Samples > 0 {
		f.Evidence = append(f.Evidence, rules.Share("CPU samples running interpreted", interpreted))
	}
	if full {
		f.Severity = rules.High
		f.Impact = interpreted
		f.ImpactBasis = "share of CPU samples whose top frame runs in the interpreter: at most what compiling them gives back (cold code runs interpreted in any JVM)"
		when := "is full"
		if vm.CodeCacheFull == 0 { // full before the recording, by the heap's count since start
			when = fmt.Sprintf("was full %d times since the JVM started", fullest.FullCount)
		}
		f.Summary = fmt.Sprintf("The code cache %s (%s, %s used): the JIT stops compiling when it fills, and %s of CPU samples run interpreted",
			when, fullest.Name, human.Percent(fullest.Used()), human.Percent(interpreted))
		f.Evidence = append(f.Evidence, rules.Count("code cache full events (jdk.CodeCacheFull)", float64(vm.CodeCacheFull), ""))
	} else {
		f.Severity = rules.Medium
		f.ImpactBasis = "not measured: the JIT still compiles; when the cache fills it stops"
		f.Summary = fmt.Sprintf("The code cache is nearly full: %s is %s used", fullest.Name, human.Percent(fullest.Used()))
	}
	if size := reserved(vm); size > 0 && size < 240<<20 {
		f.Fix = fmt.Sprintf("The code cache is %s, below the default 240 MB: raise -XX:ReservedCodeCacheSize. %s", human.Bytes(uint64(size)), f.Fix)
	}
	pass.Report(f)
	return nil
}

// fullestHeap is the code heap most used, a heap that was found full first.
func fullestHeap(vm jfr.VM) (jfr.CodeHeap, bool) {
	var best jfr.CodeHeap
	for _, h := range vm.CodeCache {
		if strings.EqualFold(h.Name, "Unused") {
			continue // some JDKs name the unsegmented cache so in jdk.CodeCacheFull
		}
		if (h.FullCount > 0) != (best.FullCount > 0) {
			if h.FullCount > 0 {
				best = h
			}
			continue
		}
		if h.Used() > best.Used() {
			best = h
		}
	}
	return best, vm.CodeCacheFull > 0 || best.FullCount > 0
}

// reserved is the code cache's whole size: the code heaps' sizes added.
func reserved(vm jfr.VM) int64 {
	var n int64
	for _, h := range vm.CodeCache {
		if !strings.EqualFold(h.Name, "Unused") {
			n += h.Size
		}
	}
	return n
}
