package jvm012

import (
	"strings"
	"testing"

	"github.com/perfdoctor/perfdoctor/rules"
	"github.com/perfdoctor/perfdoctor/rules/jvmthreads/jvmthreadstest"
)

// One shard thread of four gets 90% of each round's work.
func TestFiresOnUnbalancedShards(t *testing.T) {
	res := jvmthreadstest.Run(t, "unbalanced", Rule)
	if len(res.Findings) != 1 {
		t.Fatalf("got %+v", res)
	}
	f := res.Findings[0]
	if f.Severity != rules.High || !strings.Contains(f.Summary, "Thread group shard: one of its 4 threads (shard-0)") {
		t.Errorf("summary %q at %s", f.Summary, f.Severity)
	}
	if len(f.Locations) == 0 || f.Locations[0].Function != "perfdoctor.fixtures.ThreadWork.work" {
		t.Errorf("locations %+v", f.Locations)
	}
}

// An even split, and groups that are not parallel work: silent.
func TestSilentOnBalancedWork(t *testing.T) {
	for _, mode := range []string{"balanced", "rightpool", "largepool", "switches"} {
		if res := jvmthreadstest.Run(t, mode, Rule); len(res.Findings) != 0 {
			t.Errorf("%s: %+v", mode, res.Findings)
		}
	}
}
