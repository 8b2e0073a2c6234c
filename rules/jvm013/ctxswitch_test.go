package jvm013

import (
	"strings"
	"testing"

	"github.com/perfdoctor/perfdoctor/rules"
	"github.com/perfdoctor/perfdoctor/rules/jvmthreads/jvmthreadstest"
)

// Four pairs of threads handing a token through SynchronousQueues.
func TestFiresOnHandOffs(t *testing.T) {
	res := jvmthreadstest.Run(t, "switches", Rule)
	if len(res.Findings) != 1 {
		t.Fatalf("got %+v", res)
	}
	f := res.Findings[0]
	if f.Severity < rules.Low || !strings.Contains(f.Summary, "per CPU") || f.Impact < 0.1 {
		t.Errorf("summary %q at %s, impact %.2f", f.Summary, f.Severity, f.Impact)
	}
}

// Workloads that block, compute or queue without hand-offs: silent.
func TestSilentOnOrdinarySwitching(t *testing.T) {
	for _, mode := range []string{"balanced", "rightpool", "unlocked", "bursts"} {
		if res := jvmthreadstest.Run(t, mode, Rule); len(res.Findings) != 0 {
			t.Errorf("%s: %+v", mode, res.Findings)
		}
	}
}
