// Package harness is what the casebook's end-to-end tests share: binaries
// built once per test run, the rule for tools a test needs (skip on a
// developer's machine, fail under CI, where scripts/test.sh installs them),
// services run as separate processes and stopped with their test, and the
// findings of `perfdoctor diagnose --format json`.
package harness

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/perfdoctor/perfdoctor/internal/supervise"
	"github.com/perfdoctor/perfdoctor/rules"
	"github.com/perfdoctor/perfdoctor/rules/ruletest"
)

// Perfdoctor is the import path of the perfdoctor command.
const Perfdoctor = "github.com/perfdoctor/perfdoctor/cmd/perfdoctor"

// ServiceToolchain names the environment variable that selects the Go
// toolchain the services (every command but perfdoctor) are built with,
// e.g. go1.27.0: the casebook must pass on the newest Go as on the
// installed one. The go command fetches that toolchain from the module
// proxy (scripts/test.sh does so ahead of the tests).
const ServiceToolchain = "PERFDOCTOR_CASEBOOK_GO"

// Main builds each command (import path -> where to store its binary's
// path) into a temporary directory, runs the tests, then after (what the
// tests shared, such as compiled classes) and removes the directory. In
// -short mode it runs nothing: these tests start services and load them.
func Main(m *testing.M, suite string, builds map[string]*string, after ...func()) {
	flag.Parse() // for testing.Short; m.Run would parse them anyway
	if testing.Short() {
		fmt.Printf("%s: skipped in -short mode\n", suite)
		os.Exit(0)
	}
	dir, err := os.MkdirTemp("", "perfdoctor-"+suite)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := 1
	defer func() { os.RemoveAll(dir); os.Exit(code) }()
	for pkg, path := range builds {
		*path = filepath.Join(dir, filepath.Base(pkg))
		build := exec.Command("go", "build", "-o", *path, pkg)
		if v := os.Getenv(ServiceToolchain); v != "" && pkg != Perfdoctor {
			build.Env = append(os.Environ(), "GOTOOLCHAIN="+v)
			fmt.Printf("%s: building %s with %s\n", suite, pkg, v)
		}
		if out, err := build.CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "go build %s: %v\n%s", pkg, err, out)
			return
		}
	}
	code = m.Run()
	for _, f := range after {
		f()
	}
}

// InCI reports whether the tests run under CI ($CI set), where every tool
// they need must be installed.
func InCI() bool {
	v := strings.ToLower(os.Getenv("CI"))
	return v != "" && v != "0" && v != "false"
}

// Need skips the test when a tool is missing from PATH, or fails it under
// CI; install says what provides the tools.
func Need(t testing.TB, install string, tools ...string) {
	t.Helper()
	for _, tool := range tools {
		if _, err := exec.LookPath(tool); err != nil {
			if InCI() {
				t.Fatalf("CI is set and %s is missing: scripts/test.sh installs %s", tool, install)
			}
			t.Skipf("skipped: no %s on PATH (%s)", tool, install)
		}
	}
}

// Start runs cmd as a service that the test stops (SIGTERM, then SIGKILL
// after 5 s), and returns the rest of the first line of its standard output
// that starts with prefix, once it appears within timeout.
func Start(t testing.TB, cmd *exec.Cmd, prefix string, timeout time.Duration) string {
	t.Helper()
	p, rest, err := supervise.StartLine(context.Background(), cmd, prefix, timeout)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Stop)
	return rest
}

// Fact is one piece of a finding's evidence.
type Fact struct {
	Name   string
	Value  string
	Number float64
}

// Location is where a finding points in the code.
type Location struct {
	Function, File string
	Line           int
	Share          float64
}

// Finding is a finding as diagnose --format json writes it.
type Finding struct {
	ID, Rule, Class, Severity, Summary, Fix, Example string
	Resource                                         string
	CausedBy                                         string `json:"caused_by"`
	Impact                                           float64
	Evidence                                         []Fact
	Locations                                        []Location
}

// Fact returns the evidence named name, failing the test without it.
func (f Finding) Fact(t testing.TB, name string) float64 {
	t.Helper()
	for _, e := range f.Evidence {
		if e.Name == name {
			return e.Number
		}
	}
	t.Fatalf("finding %s has no fact %q: %+v", f.Rule, name, f.Evidence)
	return 0
}

// Report is diagnose's JSON report, as much of it as the tests read.
type Report struct {
	Findings   []Finding
	NotChecked []struct{ Rule, Reason string } `json:"not_checked"`
	Inputs     struct {
		System, Metrics, Partial, Trace bool
		Profiles                        []string
		Skipped                         []struct{ Path, Reason string }
	}
}

// TooFewSamples reports whether diagnose left the rule unchecked because
// the profile held too few samples: a machine too busy to give the target
// CPU, not a verdict.
func (r Report) TooFewSamples(rule string) bool {
	for _, nc := range r.NotChecked {
		if nc.Rule == rule && strings.Contains(nc.Reason, "too few samples") {
			return true
		}
	}
	return false
}

// Diagnose runs `perfdoctor diagnose DIR --format json` and logs the
// findings in rank order.
func Diagnose(t testing.TB, perfdoctor, dir string) Report {
	t.Helper()
	stdout, err := exec.Command(perfdoctor, "diagnose", dir, "--format", "json").Output()
	if err != nil {
		t.Fatalf("perfdoctor diagnose: %v", err)
	}
	var r Report
	if err := json.Unmarshal(stdout, &r); err != nil {
		t.Fatalf("diagnose JSON: %v\n%s", err, stdout)
	}
	for i, f := range r.Findings {
		link := ""
		if f.CausedBy != "" {
			link = " (symptom of " + f.CausedBy + ")"
		}
		t.Logf("%d. %s %s %s impact %.2f of %s%s: %s", i+1, f.Severity, f.Class, f.Rule, f.Impact, f.Resource, link, f.Summary)
	}
	for _, v := range Whole(r.Findings) {
		t.Error(v)
	}
	return r
}

// Whole lists what makes a diagnosis unsignable as a whole
// (ruletest.Whole: CPU impacts above 100%, a symptom above its cause).
// Diagnose fails the test on each, for every live casebook diagnosis, as
// ruletest.Run does for every recorded one.
func Whole(fs []Finding) []string {
	rs := make([]rules.Finding, len(fs))
	for i, f := range fs {
		rs[i] = rules.Finding{ID: f.ID, Resource: f.Resource, Impact: f.Impact, CausedBy: f.CausedBy}
	}
	return ruletest.Whole(rs)
}

// Expect fails t for each expectation of want (want.txt's format, read by
// rules/ruletest) that the findings break: a live test holds a fresh
// diagnosis to the same expectations its recorded bundle is held to
// offline (casebook's TestRecorded).
func Expect(t testing.TB, fs []Finding, want string) {
	t.Helper()
	exp, err := ruletest.Parse(strings.NewReader(want))
	if err != nil {
		t.Fatalf("expectations: %v\n%s", err, want)
	}
	res := rules.Result{Findings: make([]rules.Finding, len(fs))}
	for i, f := range fs {
		r := rules.Finding{ID: f.ID, Rule: f.Rule, Class: f.Class, Summary: f.Summary, Fix: f.Fix, Example: f.Example, CausedBy: f.CausedBy}
		if err := r.Severity.UnmarshalText([]byte(f.Severity)); err != nil {
			t.Fatalf("finding %s: %v", f.ID, err)
		}
		for _, e := range f.Evidence {
			r.Evidence = append(r.Evidence, rules.Fact{Name: e.Name, Value: e.Value, Num: e.Number})
		}
		res.Findings[i] = r
	}
	for _, v := range ruletest.Violations(res, exp) {
		t.Error(v)
	}
}
