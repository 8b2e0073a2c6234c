package net002

import (
	"math"
	"strings"
	"testing"

	"github.com/perfdoctor/perfdoctor/facts"

	"github.com/perfdoctor/perfdoctor/bundle"
	"github.com/perfdoctor/perfdoctor/evidence"
	"github.com/perfdoctor/perfdoctor/internal/testprof"
	"github.com/perfdoctor/perfdoctor/internal/testsys"
	"github.com/perfdoctor/perfdoctor/rules"
)

func run(t *testing.T, name string, edit func(start, end *bundle.SystemSnapshot)) rules.Result {
	t.Helper()
	return rules.Run(facts.New(testsys.Evidence(t, name, edit)), []*rules.Rule{Rule})
}

func fact(f rules.Finding, name string) float64 {
	for _, e := range f.Evidence {
		if e.Name == name {
			return e.Num
		}
	}
	return math.NaN()
}

func TestFiresOnConnectionPerRequest(t *testing.T) {
	res := run(t, "e2-bad", nil)
	if len(res.Findings) != 1 {
		t.Fatalf("want one finding, got %+v (not checked %+v)", res.Findings, res.NotChecked)
	}
	f := res.Findings[0]
	// Recorded: 5437 TIME_WAIT to 127.0.0.1:22418, all closed in the last
	// 5 s; ports 32768-60999.
	if f.Severity != rules.High || f.Impact != 1 || !strings.Contains(f.Summary, "127.0.0.1:22418 at 1087/s, 231% of the ceiling of 471/s (28232 ports / 60 s TIME_WAIT)") {
		t.Errorf("finding %s %.2f %q", f.Severity, f.Impact, f.Summary)
	}
	if c := fact(f, "ceiling per destination"); math.Abs(c-28232.0/60) > 1e-9 {
		t.Errorf("ceiling %v", c)
	}
	if !strings.Contains(f.Fix, "tcp_tw_reuse=1") || !strings.Contains(f.Fix, "Never tcp_tw_recycle") || !strings.HasPrefix(f.Fix, "Reuse connections") {
		t.Errorf("fix does not put reuse first, tw_reuse for outbound, never recycle: %s", f.Fix)
	}
}

func TestSilentWithKeepAlive(t *testing.T) {
	// Recorded while E2's fixed variant ran: 6786 TIME_WAIT left to an
	// earlier run's backend, none of them recent.
	if res := run(t, "e2-fixed", nil); len(res.Findings) != 0 {
		t.Fatalf("kept-alive connections reported: %+v", res.Findings[0])
	}
}

func TestWiderPortRangeRaisesTheCeiling(t *testing.T) {
	wide := func(_, end *bundle.SystemSnapshot) {
		end.Net.Sysctls.PortRangeLow, end.Net.Sysctls.PortRangeHigh = 1024, 65535
	}
	res := run(t, "e2-bad", wide)
	if len(res.Findings) != 1 || !strings.Contains(res.Findings[0].Summary, "101% of the ceiling of 1075/s (64512 ports") {
		t.Fatalf("with 64512 ports 1087/s is just above the ceiling of 1075/s: %+v", res.Findings)
	}
	// A third of the rate: 35% of the ceiling, low.
	slower := func(start, end *bundle.SystemSnapshot) {
		wide(start, end)
		end.Net.Remotes[0].RecentTimeWait /= 3
	}
	if res := run(t, "e2-bad", slower); len(res.Findings) != 1 || res.Findings[0].Severity != rules.Low {
		t.Fatalf("362/s against 1075/s: %+v", res.Findings)
	}
}

func TestPortsHeldWithoutTimers(t *testing.T) {
	// An older snapshot without TIME_WAIT timers: the rate comes from the
	// growth over the window, capped by the namespace's ActiveOpens.
	noAges := func(start, end *bundle.SystemSnapshot) {
		start.Net.TimeWaitAges, end.Net.TimeWaitAges = false, false
	}
	res := run(t, "e2-bad", noAges)
	if len(res.Findings) != 1 || res.Findings[0].Severity != rules.High {
		t.Fatalf("growth of 3317 TIME_WAIT in 3.4 s: %+v", res.Findings)
	}
	if res := run(t, "e2-fixed", noAges); len(res.Findings) != 0 {
		t.Fatalf("leftover TIME_WAIT, 32 connections opened in the window: %+v", res.Findings[0])
	}
}

func TestNotCheckedWithoutTwoSnapshots(t *testing.T) {
	ev := testsys.Evidence(t, "e2-bad", nil)
	ev.SystemStart = nil
	res := rules.Run(facts.New(ev), []*rules.Rule{Rule})
	if len(res.Findings) != 0 || len(res.NotChecked) != 1 || res.NotChecked[0].Missing[0] != rules.Host {
		t.Fatalf("got %+v", res)
	}
}

// TestAnotherProcessesConnections: TIME_WAIT sockets have no owner, so the
// rule asks whether the target process held any socket to the destination.
// A process churning connections holds some open at every instant; one that
// held none at either end is not the one making them (another test's client
// in the same network namespace, in CI).
func TestAnotherProcessesConnections(t *testing.T) {
	const dst = "127.0.0.1:22418"
	own := func(n int) func(start, end *bundle.SystemSnapshot) {
		return func(start, end *bundle.SystemSnapshot) {
			for _, s := range []*bundle.SystemSnapshot{start, end} {
				s.Net.ProcessSockets = true
				s.Process = &bundle.ProcessInfo{PID: 4242}
				for i := range s.Net.Remotes {
					if s.Net.Remotes[i].Addr == dst {
						s.Net.Remotes[i].Process = n
					}
				}
			}
		}
	}
	if f := run(t, "e2-bad", own(6)).Findings; len(f) != 1 || f[0].Severity != rules.High {
		t.Errorf("the target's own connections: %+v", f)
	}
	// The recording's perf stacks show this process connecting: short
	// connections fall between the two instants, the stacks decide.
	if f := run(t, "e2-bad", own(0)).Findings; len(f) != 1 || f[0].Severity != rules.High {
		t.Errorf("connecting, with no socket open at either instant: %+v", f)
	}
	// A service whose stacks show no connect(): another process dials.
	ev := testsys.Evidence(t, "e2-bad", own(0))
	delete(ev.Profiles, evidence.Perf)
	ev.Profiles[evidence.CPU] = testprof.Build(testprof.Stack{Value: 500, Funcs: []string{"main.serve", "net/http.(*conn).serve"}})
	f := rules.Run(facts.New(ev), []*rules.Rule{Rule}).Findings
	if len(f) != 1 || f[0].Severity != rules.Low || f[0].Impact > 0.05 || !strings.Contains(f[0].Summary, "pid 4242 neither holds a socket to it nor calls connect()") {
		t.Errorf("another process's connections: %+v", f)
	}
	// Without stacks the rule cannot tell, and says so.
	ev = testsys.Evidence(t, "e2-bad", own(0))
	delete(ev.Profiles, evidence.Perf)
	delete(ev.Profiles, evidence.CPU)
	f = rules.Run(facts.New(ev), []*rules.Rule{Rule}).Findings
	if len(f) != 1 || f[0].Severity != rules.High || !strings.Contains(strings.Join(f[0].Caveats, " "), "may be another process's") {
		t.Errorf("no stacks: %+v", f)
	}
}
