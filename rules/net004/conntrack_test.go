package net004

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
	return rules.Run(facts.New(testsys.Evidence(t, "e2-fixed", edit)), []*rules.Rule{Rule})
}

func TestSilentOnRecordedHost(t *testing.T) {
	// Recorded: conntrack loaded, 0 of 262144 entries.
	if res := run(t, nil); len(res.Findings) != 0 {
		t.Fatalf("empty table reported: %+v", res.Findings[0])
	}
	// No conntrack at all: nothing to fill.
	none := func(start, end *bundle.SystemSnapshot) { start.Net.Conntrack, end.Net.Conntrack = nil, nil }
	if res := run(t, none); len(res.Findings) != 0 {
		t.Fatalf("no conntrack reported: %+v", res.Findings[0])
	}
}

func TestFiresNearTheLimit(t *testing.T) {
	full := func(_, end *bundle.SystemSnapshot) { end.Net.Conntrack.Count = 250000 }
	res := run(t, full)
	if len(res.Findings) != 1 || res.Findings[0].Severity != rules.High || !strings.Contains(res.Findings[0].Summary, "95% full (250000 of 262144") {
		t.Fatalf("95%% full: %+v", res.Findings)
	}
	half := func(_, end *bundle.SystemSnapshot) { end.Net.Conntrack.Count = 140000 }
	if res := run(t, half); len(res.Findings) != 1 || res.Findings[0].Severity != rules.Low {
		t.Fatalf("53%% full: %+v", res.Findings)
	}
}

func TestDropsAreHigh(t *testing.T) {
	drops := func(start, end *bundle.SystemSnapshot) {
		end.Net.Conntrack.Count = 60000
		end.Net.Conntrack.Drops = start.Net.Conntrack.Drops + 12
	}
	res := run(t, drops)
	if len(res.Findings) != 1 || res.Findings[0].Severity != rules.High || !strings.Contains(res.Findings[0].Summary, "12 packets dropped") {
		t.Fatalf("drops: %+v", res.Findings)
	}
}
