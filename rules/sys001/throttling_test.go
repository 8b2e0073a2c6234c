package sys001

import (
	"strings"
	"testing"

	"github.com/perfdoctor/perfdoctor/facts"

	"github.com/perfdoctor/perfdoctor/bundle"
	"github.com/perfdoctor/perfdoctor/internal/testsys"
	"github.com/perfdoctor/perfdoctor/rules"
)

func run(t *testing.T, edit func(start, end *bundle.SystemSnapshot)) rules.Result {
	t.Helper()
	return rules.Run(facts.New(testsys.Evidence(t, "e2-bad", edit)), []*rules.Rule{Rule})
}

// quota gives both snapshots a 1-CPU quota with the given period counters.
func quota(periods, throttled [2]uint64, usec [2]uint64) func(start, end *bundle.SystemSnapshot) {
	return func(start, end *bundle.SystemSnapshot) {
		for i, s := range []*bundle.SystemSnapshot{start, end} {
			s.Cgroup.CPUQuotaCores = 1
			s.Cgroup.NrPeriods, s.Cgroup.NrThrottled, s.Cgroup.ThrottledUsec = periods[i], throttled[i], usec[i]
		}
	}
}

func TestSilentWithoutQuota(t *testing.T) {
	// Recorded: cgroup v1 with no CPU quota.
	if res := run(t, nil); len(res.Findings) != 0 || len(res.NotChecked) != 0 {
		t.Fatalf("no quota: %+v", res)
	}
	// A quota that is never hit.
	if res := run(t, quota([2]uint64{1000, 1034}, [2]uint64{5, 5}, [2]uint64{9000, 9000})); len(res.Findings) != 0 {
		t.Fatalf("quota never hit: %+v", res.Findings[0])
	}
}

func TestFiresWhenThrottled(t *testing.T) {
	res := run(t, quota([2]uint64{1000, 1034}, [2]uint64{100, 112}, [2]uint64{5e6, 5.8e6}))
	if len(res.Findings) != 1 {
		t.Fatalf("12 of 34 periods throttled: %+v", res)
	}
	f := res.Findings[0]
	if f.Severity != rules.High || !strings.HasPrefix(f.Summary, "throttled in 35% of CPU periods under a 1-CPU quota (0.23 s stalled per second)") {
		t.Errorf("finding %s %q", f.Severity, f.Summary)
	}
	if res := run(t, quota([2]uint64{1000, 1034}, [2]uint64{100, 104}, [2]uint64{0, 0})); len(res.Findings) != 1 || res.Findings[0].Severity != rules.Medium {
		t.Fatalf("4 of 34: %+v", res.Findings)
	}
}
