package jvm017

import (
	"strings"
	"testing"

	"github.com/perfdoctor/perfdoctor/facts"

	"github.com/perfdoctor/perfdoctor/evidence"
	"github.com/perfdoctor/perfdoctor/formats/jfr"
	"github.com/perfdoctor/perfdoctor/internal/testprof"
	"github.com/perfdoctor/perfdoctor/rules"
)

// CodeCache.java: javac compiled in process under a 2.6 MB code cache.
func TestFiresOnFullCodeCache(t *testing.T) {
	res := rules.Run(facts.New(testprof.JVMRecording(t, "codecache-jdk25.jfr")), []*rules.Rule{Rule})
	if len(res.Findings) != 1 {
		t.Fatalf("want one finding, got %+v", res.Findings)
	}
	f := res.Findings[0]
	if f.Severity != rules.High || f.Impact < 0.3 || !strings.Contains(f.Summary, "The code cache is full") {
		t.Errorf("severity %s impact %.2f summary %q", f.Severity, f.Impact, f.Summary)
	}
	if !strings.Contains(f.Fix, "below the default 240 MB") {
		t.Errorf("fix %q", f.Fix)
	}
}

// A heap that filled before the recording counts too, said as such.
func TestFiresWhenFullBefore(t *testing.T) {
	ev := evidence.NewBuilder("test").Evidence()
	ev.JVM = &jfr.Summary{VM: jfr.VM{CodeCache: []jfr.CodeHeap{{Name: "CodeCache", Size: 32 << 20, Unallocated: 8 << 20, FullCount: 3}}}}
	res := rules.Run(facts.New(ev), []*rules.Rule{Rule})
	if len(res.Findings) != 1 || res.Findings[0].Severity != rules.High || !strings.Contains(res.Findings[0].Summary, "was full 3 times since the JVM started") {
		t.Fatalf("got %+v", res.Findings)
	}
}

func TestFiresWhenNearlyFull(t *testing.T) {
	ev := evidence.NewBuilder("test").Evidence()
	ev.JVM = &jfr.Summary{VM: jfr.VM{CodeCache: []jfr.CodeHeap{
		{Name: "CodeHeap 'non-nmethods'", Size: 5 << 20, Unallocated: 4 << 20},
		{Name: "CodeHeap 'non-profiled nmethods'", Size: 100 << 20, Unallocated: 5 << 20},
	}}}
	res := rules.Run(facts.New(ev), []*rules.Rule{Rule})
	if len(res.Findings) != 1 || res.Findings[0].Severity != rules.Medium || !strings.Contains(res.Findings[0].Summary, "'non-profiled nmethods' is 95% used") {
		t.Fatalf("got %+v", res.Findings)
	}
}

// Healthy.java on JDK 17 and 25, and every other fixture but the one that
// fills its cache.
func TestSilentOnHealthy(t *testing.T) {
	for _, name := range []string{"healthy-jdk17.jfr", "healthy-jdk25.jfr", "healthy-zgc-jdk25.jfr", "deepstacks-jdk25.jfr", "gcheavy-jdk17.jfr"} {
		if res := rules.Run(facts.New(testprof.JVMRecording(t, name)), []*rules.Rule{Rule}); len(res.Findings) != 0 {
			t.Errorf("%s: %+v", name, res.Findings)
		}
	}
}
