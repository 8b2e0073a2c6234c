package jvm020

import (
	"strings"
	"testing"

	"github.com/perfdoctor/perfdoctor/facts"

	"github.com/perfdoctor/perfdoctor/formats/jfr"
	"github.com/perfdoctor/perfdoctor/internal/testprof"
	"github.com/perfdoctor/perfdoctor/rules"
)

// DeepStacks.java works 100 calls deep under JFR's default depth of 64.
func TestFiresOnDeepStacks(t *testing.T) {
	res := rules.Run(facts.New(testprof.JVMRecording(t, "deepstacks-jdk25.jfr")), []*rules.Rule{Rule})
	if len(res.Findings) != 1 {
		t.Fatalf("want one finding, got %+v", res.Findings)
	}
	f := res.Findings[0]
	if f.Severity != rules.Low || f.Impact != 0 || f.Claim != nil || !strings.Contains(f.Summary, "cut at 64 frames") || !strings.Contains(f.Fix, "stackdepth=256") {
		t.Errorf("%+v", f)
	}
}

func TestSilentOnHealthy(t *testing.T) {
	for _, name := range []string{"healthy-jdk17.jfr", "healthy-jdk25.jfr", "healthy-zgc-jdk25.jfr"} {
		if res := rules.Run(facts.New(testprof.JVMRecording(t, name)), []*rules.Rule{Rule}); len(res.Findings) != 0 {
			t.Errorf("%s: %+v", name, res.Findings)
		}
	}
}

// A profiler that does not flag cut stacks leaves them at its limit.
func TestStacksAtTheDepthLimit(t *testing.T) {
	for _, c := range []struct {
		st   jfr.SampledStacks
		want int
	}{
		{jfr.SampledStacks{Samples: 200, MaxDepth: 64, AtMaxDepth: 50}, 50},
		{jfr.SampledStacks{Samples: 200, MaxDepth: 63, AtMaxDepth: 50}, 0},
		{jfr.SampledStacks{Samples: 200, Truncated: 30, MaxDepth: 64, AtMaxDepth: 50}, 30},
	} {
		if got := cutStacks(c.st); got != c.want {
			t.Errorf("%+v: %d, want %d", c.st, got, c.want)
		}
	}
}
