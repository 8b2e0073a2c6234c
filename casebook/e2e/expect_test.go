package e2e

import (
	"strings"
	"testing"

	"github.com/perfdoctor/perfdoctor/casebook/internal/harness"
	"github.com/perfdoctor/perfdoctor/casebook/serve"
)

// TestViolations checks the expectations themselves (serve.Case.Want read
// by the rule test harness), on made-up findings: each must fail where its
// case is not met and stay silent where it is.
func TestViolations(t *testing.T) {
	f := func(class, sev string, impact float64, res string) harness.Finding {
		return harness.Finding{Class: class, Severity: sev, Impact: impact, Resource: res}
	}
	two := serve.Case{Class: "regexp-compile-hot", AlsoTop3: []string{"string-formatting"},
		Below: map[string]string{"gc-pressure": "regexp-compile-hot"}}
	churn := serve.Case{Class: "connection-churn", Below: map[string]string{"kernel-network-overhead": "connection-churn"}}
	control := serve.Case{}
	job := serve.Case{Class: "compression-level", FixedKeeps: map[string]string{"compression-level": "compressing is the job"}}
	for _, tc := range []struct {
		name     string
		c        serve.Case
		variant  string
		findings []harness.Finding
		want     []string // a substring of each violation, in order
	}{
		{"both problems, symptom under its cause", two, "bad", []harness.Finding{
			f("regexp-compile-hot", "high", .3, "cpu"), f("gc-pressure", "medium", .2, "cpu"), f("string-formatting", "medium", .1, "cpu")}, nil},
		{"second problem fourth", two, "bad", []harness.Finding{
			f("regexp-compile-hot", "high", .3, "cpu"), f("gc-pressure", "medium", .2, "cpu"), f("scheduling-latency", "medium", .9, "latency"), f("string-formatting", "low", .05, "cpu")},
			[]string{"top3 string-formatting: ranks 4 among the problems"}},
		{"second problem fourth behind a symptom", two, "bad", []harness.Finding{
			f("regexp-compile-hot", "high", .3, "cpu"), {Class: "gc-pressure", Severity: "low", Impact: .2, Resource: "cpu", CausedBy: "LIB007"},
			f("scheduler-overhead", "low", .09, "cpu"), f("string-formatting", "low", .08, "cpu")}, nil},
		{"second problem absent", two, "bad", []harness.Finding{f("regexp-compile-hot", "high", .3, "cpu")},
			[]string{"top3 string-formatting: absent"}},
		{"symptom first", two, "bad", []harness.Finding{
			f("gc-pressure", "high", .3, "cpu"), f("regexp-compile-hot", "high", .3, "cpu"), f("string-formatting", "low", .05, "cpu")},
			[]string{"top regexp-compile-hot high: the top finding is", "after gc-pressure regexp-compile-hot: the symptom ranks 1, above its cause (rank 2)"}},
		{"cause at medium", churn, "bad", []harness.Finding{f("connection-churn", "medium", .2, "cpu")},
			[]string{"top connection-churn high: the top finding  is medium, below high"}},
		{"symptom without its cause", churn, "bad", []harness.Finding{f("kernel-network-overhead", "high", .5, "cpu")},
			[]string{"top connection-churn high: the top finding", "after kernel-network-overhead connection-churn: the symptom ranks 1, above its cause (rank absent)"}},
		{"no findings", churn, "bad", nil, []string{"top connection-churn high: no findings"}},
		{"fixed: class at low, other medium", churn, "fixed", []harness.Finding{
			f("scheduler-overhead", "medium", .1, "cpu"), f("connection-churn", "low", .02, "cpu")}, nil},
		{"fixed: class at medium", churn, "fixed", []harness.Finding{f("connection-churn", "medium", .1, "cpu")},
			[]string{"never connection-churn medium: found"}},
		{"fixed: anything high", churn, "fixed", []harness.Finding{f("gc-pressure", "high", .3, "cpu")},
			[]string{"below high: "}},
		{"fixed keeps the class that is its job", job, "fixed", []harness.Finding{
			f("compression-level", "high", .3, "cpu"), f("hot-function", "low", .1, "cpu")}, nil},
		{"fixed keeps its class, not another high", job, "fixed", []harness.Finding{
			f("compression-level", "high", .3, "cpu"), f("gc-pressure", "high", .2, "cpu")}, []string{"below high except compression-level: "}},
		{"backlog called a leak", serve.Case{Never: "goroutine-leak"}, "bad", []harness.Finding{f("goroutine-leak", "low", .3, "memory")},
			[]string{"never goroutine-leak: found"}},
		{"backlog with its own symptom at medium", serve.Case{Never: "goroutine-leak"}, "bad", []harness.Finding{f("memory-growth", "medium", .3, "memory")}, nil},
		{"control quiet", control, "bad", []harness.Finding{f("hot-function", "low", .3, "cpu")}, nil},
		{"control medium", control, "fixed", []harness.Finding{f("scheduling-latency", "medium", .97, "latency")},
			[]string{"below medium: "}},
	} {
		got := violations(tc.c, tc.variant, "go1.26.0", tc.findings)
		ok := len(got) == len(tc.want)
		for i := 0; ok && i < len(got); i++ {
			ok = strings.Contains(got[i], tc.want[i])
		}
		if !ok {
			t.Errorf("%s: violations\n  %q\nwant\n  %q", tc.name, got, tc.want)
		}
	}
}

// A runtime feature of a newer Go must be cited from that Go on, and is
// not asked of an older one.
func TestProofFromGoVersion(t *testing.T) {
	c := serve.Case{Class: "goroutine-leak", ProofFrom: map[string]string{"go1.27": "leaked (goroutineleak profile)"}}
	proven := []harness.Finding{{Class: "goroutine-leak", Severity: "high", Evidence: []harness.Fact{{Name: "leaked (goroutineleak profile)"}}}}
	grown := []harness.Finding{{Class: "goroutine-leak", Severity: "high", Evidence: []harness.Fact{{Name: "growth over the window"}}}}
	for _, tc := range []struct {
		goVersion string
		findings  []harness.Finding
		want      int
	}{
		{"go1.27.0", proven, 0},
		{"go1.28rc1", proven, 0},
		{"go1.27.0", grown, 1},
		{"go1.27.0", nil, 1},
		{"go1.26.2", grown, 0},
	} {
		if got := violations(c, "bad", tc.goVersion, tc.findings); len(got) != tc.want {
			t.Errorf("%s %+v: %q, want %d violations", tc.goVersion, tc.findings, got, tc.want)
		}
	}
}
