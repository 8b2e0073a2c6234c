// Package jvm006 detects primitive values boxed on the hot path of a JVM
// service (finding class jvm-boxing).
package jvm006

import (
	"fmt"

	"github.com/perfdoctor/perfdoctor/facts"

	"github.com/perfdoctor/perfdoctor/evidence"
	"github.com/perfdoctor/perfdoctor/internal/human"
	"github.com/perfdoctor/perfdoctor/rules"
)

// Rule is JVM006.
var Rule = &rules.Rule{
	ID:    "JVM006",
	Class: "jvm-boxing",
	Doc: rules.Doc{
		Title: "Boxing primitives takes a large share of CPU",
		Text: `Putting an int, long or double into a collection, a generic method or a
varargs call boxes it: Integer.valueOf and friends allocate a wrapper object
(outside the small cached range) that the collector then has to reclaim.
Maps of Long to Double, streams of Integer and counters kept in
Map<String, Integer> do it per element.`,
		Evidence: `CPU share of samples under the wrappers' valueOf methods and constructors
(java.lang.Integer, Long, Short, Byte, Character, Float, Double, Boolean).
With an allocation profile, the share of sampled allocation in wrapper
classes is shown too. Reports from 5% of CPU.`,
		Fix: `Keep primitives primitive on the hot path: arrays and primitive collections
(fastutil, Eclipse Collections, HPPC: Long2DoubleOpenHashMap), IntStream and
LongStream instead of Stream<Integer>, mutable counters (int[] or LongAdder)
instead of Map.merge on Integer values.`,
		Before:  `Map<Long, Double> prices = new HashMap<>();  prices.put(id, price);`,
		After:   `Long2DoubleOpenHashMap prices = new Long2DoubleOpenHashMap();  prices.put(id, price);`,
		Caveats: "Escape analysis removes some boxing in JIT-compiled code; the sampled frames are what remained.",
		Since:   "0.2",
		Refs:    []string{"https://docs.oracle.com/javase/tutorial/java/data/autoboxing.html"},
	},
	Needs: []rules.Input{rules.CPU},
	Uses:  []rules.Input{rules.Allocs},
	Facts: []facts.Key{facts.CPUStacks},
	Check: check,
}

var wrappers = []string{"Integer", "Long", "Short", "Byte", "Character", "Float", "Double", "Boolean"}

// Frames is the boxing family; wrapperClass the wrapper classes as JFR
// labels allocations.
var (
	Frames = func() evidence.Matcher {
		var prefixes []string
		for _, w := range wrappers {
			prefixes = append(prefixes, "java.lang."+w+".valueOf", "java.lang."+w+".<init>", "java/lang/"+w+".valueOf", "java/lang/"+w+".<init>")
		}
		return evidence.FuncPrefix(prefixes...)
	}()
	wrapperClass = func() map[string]bool {
		m := map[string]bool{}
		for _, w := range wrappers {
			m["java.lang."+w] = true
		}
		return m
	}()
)

const (
	minShare    = 0.05
	recoverable = 0.8
)

func check(pass *rules.Pass) error {
	if !pass.EnoughCPU() {
		return nil
	}
	cpu := facts.Get(pass.Facts, facts.CPUStacks)
	share := cpu.Share(Frames)
	if share < minShare {
		return nil
	}
	caller := cpu.CallerOf(Frames, func(fn string) bool { return rules.IsApplication(fn) && !Frames(fn) })
	sites := cpu.TopSites(5, func(s evidence.Sample) *evidence.Frame { return caller(s) })
	impact := share * recoverable
	f := rules.Finding{
		Severity:    rules.SeverityFor(impact),
		Impact:      impact,
		Resource:    "cpu",
		ImpactBasis: "share of CPU boxing primitives (and allocating the wrappers); primitive collections remove most of it, so about 80%",
		Summary:     fmt.Sprintf("Boxing primitives uses %s of CPU", human.Percent(share)),
		Evidence:    []rules.Fact{rules.Share("boxing share of CPU", share)},
		Fix:         pass.Rule.Doc.Fix,
		Example:     pass.Rule.Doc.Before + "\n->\n" + pass.Rule.Doc.After,
		Caveats:     []string{pass.Rule.Doc.Caveats},
		Locations:   rules.Locations(sites, "code boxing primitives"),
		Frames:      cpu.Matched(Frames, 8),
	}
	if a := allocShare(pass.Evidence); a >= 0 {
		f.Evidence = append(f.Evidence, rules.Share("sampled allocation in wrapper objects", a))
	}
	if len(sites) > 0 {
		f.Summary += " (in " + rules.ShortFunc(sites[0].Func) + ")"
	}
	f.Claim = &rules.Claim{Level: rules.LevelCode, CPU: cpu.Has(Frames), Regrade: rules.SeverityFor}
	pass.Report(f)
	return nil
}

// allocShare is the share of allocated bytes in wrapper classes, from the
// class labels of JFR's allocation samples; -1 without them.
func allocShare(ev *evidence.Evidence) float64 {
	p := ev.Profile(evidence.Allocs)
	if p == nil || len(p.SampleType) < 2 {
		return -1
	}
	var box, total int64
	labelled := false
	for _, s := range p.Sample {
		total += s.Value[1]
		if c := s.Label["class"]; len(c) > 0 {
			labelled = true
			if wrapperClass[c[0]] {
				box += s.Value[1]
			}
		}
	}
	if !labelled || total == 0 {
		return -1
	}
	return float64(box) / float64(total)
}
