package jvm011

import (
	"strings"
	"testing"

	"github.com/perfdoctor/perfdoctor/rules"
	"github.com/perfdoctor/perfdoctor/rules/jvmthreads/jvmthreadstest"
)

// Two threads for sixteen callers' 25 ms blocking tasks: too small.
func TestFiresOnSmallPool(t *testing.T) {
	res := jvmthreadstest.Run(t, "smallpool", Rule)
	if len(res.Findings) != 1 {
		t.Fatalf("got %+v", res)
	}
	f := res.Findings[0]
	if f.Severity != rules.High || !strings.Contains(f.Summary, "pool-1-thread has 2 threads") || f.Impact < 0.5 {
		t.Errorf("summary %q at %s, impact %.2f", f.Summary, f.Severity, f.Impact)
	}
	if len(f.Locations) == 0 || f.Locations[0].Function != "perfdoctor.fixtures.ThreadWork.sleep" || !strings.Contains(f.Summary, "they wait in ThreadWork.sleep") {
		t.Errorf("locations %+v", f.Locations)
	}
}

// 400 threads running CPU-bound tasks on 2 CPUs: too large.
func TestFiresOnLargePool(t *testing.T) {
	res := jvmthreadstest.Run(t, "largepool", Rule)
	if len(res.Findings) != 1 {
		t.Fatalf("got %+v", res)
	}
	if f := res.Findings[0]; !strings.Contains(f.Summary, "threads on 2 CPUs") || f.Evidence[0].Num < 300 {
		t.Errorf("summary %q", f.Summary)
	}
}

// 24 threads for the same tasks, 64 threads whose 5 ms waits go
// unrecorded (on a saturated host), and pools of other shapes: silent.
func TestSilentOnRightSizedPools(t *testing.T) {
	for _, mode := range []string{"rightpool", "sleepers", "balanced", "unbalanced", "locks", "pinned"} {
		if res := jvmthreadstest.Run(t, mode, Rule); len(res.Findings) != 0 {
			t.Errorf("%s: %+v", mode, res.Findings)
		}
	}
}
