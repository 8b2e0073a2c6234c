package ruletest

import (
	"strings"
	"testing"

	"github.com/google/pprof/profile"

	"github.com/perfdoctor/perfdoctor/evidence"
	"github.com/perfdoctor/perfdoctor/internal/testprof"
	"github.com/perfdoctor/perfdoctor/rules"
)

func TestParse(t *testing.T) {
	want, err := Parse(strings.NewReader(`# a healthy cache
top DISK001 high "fsync" "!appendfsync always"  # the sync
fires gc-pressure
never NET003 medium
below medium
count 2
notchecked LOCK001 "mutex profile"
none
top3 string-formatting
after gc-pressure regexp-compile-hot
below high except compression-level LIB004
`))
	if err != nil {
		t.Fatal(err)
	}
	got := make([]string, len(want))
	for i, e := range want {
		got[i] = e.String()
	}
	if s := strings.Join(got, "|"); s != `top DISK001 high "fsync" "!appendfsync always"|fires gc-pressure|never NET003 medium|below medium|count 2|notchecked LOCK001 "mutex profile"|none|top3 string-formatting|after gc-pressure regexp-compile-hot|below high except compression-level LIB004` {
		t.Fatalf("parsed %s", s)
	}
	for _, bad := range []string{"", "# only a comment", "top", "top GC001 severe", "below", "count -1", "never GC001 \"x\"", "top3", "after GC001", "below high but GC001", "below high except", "fires GC001 \"open", "expect GC001"} {
		if _, err := Parse(strings.NewReader(bad)); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}

func TestViolations(t *testing.T) {
	res := rules.Result{
		Findings: []rules.Finding{
			{ID: "DISK001", Rule: "DISK001", Class: "synchronous-disk-write", Severity: rules.High, Summary: "each request waits for its fsync", Fix: "appendfsync everysec"},
			{ID: "GC001", Rule: "GC001", Class: "gc-pressure", Severity: rules.Low, Summary: "GC 5%"},
		},
		NotChecked: []rules.NotChecked{{Rule: "LOCK001", Class: "lock-contention", Reason: "the mutex profile is empty"}},
	}
	ranked := rules.Result{Findings: []rules.Finding{
		{ID: "LIB007", Rule: "LIB007", Class: "regexp-compile-hot", Severity: rules.High},
		{ID: "GC001", Rule: "GC001", Class: "gc-pressure", Severity: rules.Low, CausedBy: "LIB007"},
		{ID: "SCHED001", Rule: "SCHED001", Class: "scheduler-overhead", Severity: rules.Low},
		{ID: "LIB006", Rule: "LIB006", Class: "string-formatting", Severity: rules.Low},
		{ID: "CPU001", Rule: "CPU001", Class: "hot-function", Severity: rules.Low},
	}}
	for line, ok := range map[string]bool{
		`top3 string-formatting`:               true, // third problem: the symptom under LIB007 does not count
		`top3 hot-function`:                    false,
		`top3 lock-contention`:                 false,
		`after gc-pressure regexp-compile-hot`: true,
		`after regexp-compile-hot gc-pressure`: false,
		`after lock-contention gc-pressure`:    true, // not reported: nothing to rank
		`after gc-pressure lock-contention`:    false,
		`below medium except LIB007`:           true,
		`below medium except gc-pressure`:      false,
	} {
		want, err := Parse(strings.NewReader(line))
		if err != nil {
			t.Fatal(err)
		}
		if v := Violations(ranked, want); (len(v) == 0) != ok {
			t.Errorf("%s: violations %v, want ok=%v", line, v, ok)
		}
	}
	for line, ok := range map[string]bool{
		`top DISK001 high "FSYNC" "everysec"`: true,
		`top synchronous-disk-write medium`:   true,
		`top GC001`:                           false,
		`top DISK001 high "!everysec"`:        false,
		`top DISK001 high "group commit"`:     false,
		`fires gc-pressure low`:               true,
		`fires gc-pressure medium`:            false,
		`never NET003`:                        true,
		`never GC001`:                         false,
		`never GC001 medium`:                  true,
		`below high`:                          false,
		`below medium`:                        false,
		`count 2`:                             true,
		`count 1`:                             false,
		`none`:                                false,
		`notchecked LOCK001 "mutex"`:          true,
		`notchecked LOCK001 "block"`:          false,
		`notchecked DISK001`:                  false,
	} {
		want, err := Parse(strings.NewReader(line))
		if err != nil {
			t.Fatal(err)
		}
		if v := Violations(res, want); (len(v) == 0) != ok {
			t.Errorf("%s: violations %v, want ok=%v", line, v, ok)
		}
	}
}

// TestFingerprintSeesAChange: the harness's guard that rules leave the
// evidence as they found it must notice a rule that edits a profile.
func TestFingerprintSeesAChange(t *testing.T) {
	p := testprof.Build(testprof.Stack{Value: 10, Funcs: []string{"main.work"}})
	ev := testprof.Evidence(map[evidence.Kind]*profile.Profile{evidence.CPU: p})
	before := Fingerprint(ev)
	if Fingerprint(ev) != before {
		t.Fatal("a fingerprint differs from itself")
	}
	p.Sample[0].Value[0]++
	if Fingerprint(ev) == before {
		t.Fatal("an edited sample left the fingerprint as it was")
	}
}
