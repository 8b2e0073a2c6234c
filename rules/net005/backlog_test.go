package net005

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

func overflow(n uint64) func(start, end *bundle.SystemSnapshot) {
	return func(start, end *bundle.SystemSnapshot) {
		for _, c := range []string{"TcpExt.ListenOverflows", "TcpExt.ListenDrops"} {
			end.Net.Counters[c] = start.Net.Counters[c] + n
		}
	}
}

func TestSilentWithoutOverflows(t *testing.T) {
	// Recorded: 3925 connections accepted, no overflow.
	if res := run(t, nil); len(res.Findings) != 0 {
		t.Fatalf("no overflow reported: %+v", res.Findings[0])
	}
}

func TestFiresOnOverflows(t *testing.T) {
	res := run(t, overflow(120))
	if len(res.Findings) != 1 || res.Findings[0].Severity != rules.High || !strings.HasPrefix(res.Findings[0].Summary, "120 connections overflowed accept queues in 3 s (3.0% of new connections)") {
		t.Fatalf("120 overflows of 4045: %+v", res.Findings)
	}
	if res := run(t, overflow(2)); len(res.Findings) != 1 || res.Findings[0].Severity != rules.Medium {
		t.Fatalf("2 overflows: %+v", res.Findings)
	}
}

func TestSynCookiesAloneAreLow(t *testing.T) {
	cookies := func(start, end *bundle.SystemSnapshot) {
		end.Net.Counters["TcpExt.SyncookiesSent"] = start.Net.Counters["TcpExt.SyncookiesSent"] + 40
	}
	res := run(t, cookies)
	if len(res.Findings) != 1 || res.Findings[0].Severity != rules.Low || !strings.Contains(res.Findings[0].Summary, "SYN cookies") {
		t.Fatalf("cookies: %+v", res.Findings)
	}
}

func TestNamesAFullListener(t *testing.T) {
	full := func(start, end *bundle.SystemSnapshot) {
		overflow(50)(start, end)
		end.Net.Listeners[0].Queue, end.Net.Listeners[0].Backlog = 4096, 4096
	}
	res := run(t, full)
	found := false
	for _, e := range res.Findings[0].Evidence {
		found = found || strings.HasSuffix(e.Value, ": 4096 of 4096")
	}
	if !found {
		t.Errorf("full listener not named: %+v", res.Findings[0].Evidence)
	}
}
