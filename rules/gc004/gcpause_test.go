package gc004

import (
	"strings"
	"testing"
	"time"

	"github.com/google/pprof/profile"

	"github.com/perfdoctor/perfdoctor/bundle"
	"github.com/perfdoctor/perfdoctor/evidence"
	"github.com/perfdoctor/perfdoctor/internal/testprof"
	"github.com/perfdoctor/perfdoctor/rules"
)

var t0 = time.Date(2026, 11, 24, 5, 0, 0, 0, time.UTC)

// window is a 5 s window whose pause history holds the given pauses, one
// every 100 ms, plus one pause just before the window (not counted).
func window(pauses ...time.Duration) *evidence.Evidence {
	ev := testprof.Evidence(map[evidence.Kind]*profile.Profile{})
	ev.MetricsStart = &bundle.RuntimeStats{Time: t0, NumGC: 10}
	end := &bundle.RuntimeStats{Time: t0.Add(5 * time.Second), NumGC: 10 + uint64(len(pauses))}
	end.Pauses = append(end.Pauses, bundle.Pause{End: uint64(t0.Add(-time.Second).UnixNano()), Ns: uint64(time.Second)})
	for i, d := range pauses {
		end.Pauses = append(end.Pauses, bundle.Pause{End: uint64(t0.Add(time.Duration(i+1) * 100 * time.Millisecond).UnixNano()), Ns: uint64(d)})
	}
	ev.MetricsEnd = end
	return ev
}

func TestLongPausesSetTheTail(t *testing.T) {
	res := rules.Run(window(40*time.Millisecond, 300*time.Microsecond, 60*time.Millisecond, 500*time.Microsecond), []*rules.Rule{Rule})
	if len(res.Findings) != 1 {
		t.Fatalf("100 ms of long pauses in 5 s: %+v", res)
	}
	f := res.Findings[0]
	if f.Severity != rules.Medium || f.Resource != "latency" ||
		!strings.HasPrefix(f.Summary, "GC pauses up to 60ms (2 of 10 ms or more) stop every request for 2.0% of the window") {
		t.Errorf("%s %s %q", f.Severity, f.Resource, f.Summary)
	}
}

func TestShortPausesAreSilent(t *testing.T) {
	var ps []time.Duration
	for range 40 {
		ps = append(ps, 800*time.Microsecond)
	}
	if res := rules.Run(window(ps...), []*rules.Rule{Rule}); len(res.Findings) != 0 {
		t.Fatalf("sub-millisecond pauses reported: %+v", res.Findings[0])
	}
}

// On an oversubscribed host the pauses are the host's doing: at most low,
// and the report says so.
func TestOversubscribedHostIsNamed(t *testing.T) {
	ev := window(150*time.Millisecond, 150*time.Millisecond)
	ev.SystemStart = &bundle.SystemSnapshot{Time: t0}
	ev.SystemEnd = &bundle.SystemSnapshot{Time: t0.Add(5 * time.Second), Machine: bundle.MachineInfo{NumCPU: 2, LoadAvg: [3]float64{7.3, 6, 5}}}
	res := rules.Run(ev, []*rules.Rule{Rule})
	if len(res.Findings) != 1 {
		t.Fatalf("300 ms of pauses: %+v", res)
	}
	if f := res.Findings[0]; f.Severity != rules.Low || !strings.Contains(f.Summary, "oversubscribed host (load average 7.3 on 2 CPUs)") {
		t.Errorf("%s %q", f.Severity, f.Summary)
	}
}
