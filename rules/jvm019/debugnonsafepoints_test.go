package jvm019

import (
	"strings"
	"testing"

	"github.com/perfdoctor/perfdoctor/facts"

	"github.com/perfdoctor/perfdoctor/evidence"
	"github.com/perfdoctor/perfdoctor/formats/jfr"
	"github.com/perfdoctor/perfdoctor/internal/testprof"
	"github.com/perfdoctor/perfdoctor/rules"
)

// CodeCache.java runs without the flag, sampled 361 times.
func TestFiresWithoutTheFlag(t *testing.T) {
	res := rules.Run(facts.New(testprof.JVMRecording(t, "codecache-jdk25.jfr")), []*rules.Rule{Rule})
	if len(res.Findings) != 1 {
		t.Fatalf("want one finding, got %+v", res.Findings)
	}
	f := res.Findings[0]
	if f.Severity != rules.Info || f.Impact != 0 || f.Claim != nil || !strings.Contains(f.Summary, "DebugNonSafepoints") {
		t.Errorf("%+v", f)
	}
}

// Healthy.java and DeepStacks.java run with it (record.sh's DNS options).
func TestSilentWithTheFlag(t *testing.T) {
	for _, name := range []string{"healthy-jdk17.jfr", "healthy-jdk25.jfr", "healthy-zgc-jdk25.jfr", "deepstacks-jdk25.jfr"} {
		if res := rules.Run(facts.New(testprof.JVMRecording(t, name)), []*rules.Rule{Rule}); len(res.Findings) != 0 {
			t.Errorf("%s: %+v", name, res.Findings)
		}
	}
}

// async-profiler's samples, and recordings without flags, say nothing.
func TestSilentForAsyncProfilerAndUnknownFlags(t *testing.T) {
	for _, vm := range []jfr.VM{
		{FlagsRecorded: true, Profiler: "async-profiler 4.6", Stacks: jfr.SampledStacks{Samples: 500}},
		{Stacks: jfr.SampledStacks{Samples: 500}},
	} {
		ev := evidence.NewBuilder("test").Evidence()
		ev.JVM = &jfr.Summary{VM: vm}
		if res := rules.Run(facts.New(ev), []*rules.Rule{Rule}); len(res.Findings) != 0 {
			t.Errorf("%+v: %+v", vm, res.Findings)
		}
	}
}
