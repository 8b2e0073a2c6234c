package sys002

import (
	"strings"
	"testing"

	"github.com/perfdoctor/perfdoctor/facts"

	"github.com/perfdoctor/perfdoctor/bundle"
	"github.com/perfdoctor/perfdoctor/internal/testsys"
	"github.com/perfdoctor/perfdoctor/rules"
	"github.com/perfdoctor/perfdoctor/rules/ruletest"
)

func run(t *testing.T, edit func(start, end *bundle.SystemSnapshot)) rules.Result {
	t.Helper()
	return rules.Run(facts.New(testsys.Evidence(t, "e2-fixed", edit)), []*rules.Rule{Rule})
}

func fds(limit uint64, start, end int) func(s, e *bundle.SystemSnapshot) {
	return func(s, e *bundle.SystemSnapshot) {
		s.Process.FDLimit, e.Process.FDLimit = limit, limit
		s.Process.OpenFDs, e.Process.OpenFDs = start, end
	}
}

func TestSilentWithFewDescriptors(t *testing.T) {
	// Recorded: 36 of 20000.
	if res := run(t, nil); len(res.Findings) != 0 {
		t.Fatalf("36 of 20000 reported: %+v", res.Findings[0])
	}
	if res := run(t, fds(1024, 400, 400)); len(res.Findings) != 0 {
		t.Fatalf("steady 400 of 1024 reported: %+v", res.Findings[0])
	}
}

func TestFiresNearTheLimit(t *testing.T) {
	res := run(t, fds(20000, 19500, 19500))
	if len(res.Findings) != 1 || res.Findings[0].Severity != rules.High || res.Findings[0].Summary != "19500 of 20000 file descriptors open (98%)" {
		t.Fatalf("19500 of 20000: %+v", res.Findings)
	}
}

func TestFiresOnALeak(t *testing.T) {
	// 100 more descriptors in the recorded 3.1 s window: the rest of a
	// 1024 limit goes in about 20 s.
	res := run(t, fds(1024, 300, 400))
	if len(res.Findings) != 1 || res.Findings[0].Severity != rules.High || !strings.Contains(res.Findings[0].Summary, "the limit is reached in about") {
		t.Fatalf("leak: %+v", res.Findings)
	}
}

// memcached between and inside memcaslap's runs of 256 connections: the
// descriptors that grew are the clients' connections on its listener, no
// leak (corpus native-memcached-get-per-key, 14 then 142 of 1,024).
// The same growth with no client connected more is still projected.
func TestClientsConnectionsAreNoLeak(t *testing.T) {
	ruletest.Expect(t, "../../corpus/native-memcached-get-per-key/bad", []*rules.Rule{Rule}, "none")
	res := run(t, func(s, e *bundle.SystemSnapshot) {
		fds(1024, 14, 142)(s, e)
		s.Net.Remotes, e.Net.Remotes = nil, nil
	})
	if len(res.Findings) != 1 || !strings.Contains(res.Findings[0].Summary, "the limit is reached in about") {
		t.Fatalf("growth without clients: %+v", res.Findings)
	}
}
