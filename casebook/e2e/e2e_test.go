// Package e2e runs perfdoctor end to end against the casebook services, as
// a user would: the service is a separate process that only imports
// net/http/pprof, load comes from outside it, and perfdoctor's own binary
// collects and diagnoses (TestCasebook), or diagnoses a plain folder of
// profiles saved from the pprof endpoint as with curl (TestCasebookPlain).
// These are the project's acceptance tests.
package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/perfdoctor/perfdoctor/casebook/internal/harness"
	"github.com/perfdoctor/perfdoctor/casebook/serve"
	"github.com/perfdoctor/perfdoctor/load"
	"github.com/perfdoctor/perfdoctor/rules"
	"github.com/perfdoctor/perfdoctor/rules/ruletest"
)

var bin struct{ perfdoctor, casebook string }

func TestMain(m *testing.M) {
	harness.Main(m, "e2e", map[string]*string{
		harness.Perfdoctor: &bin.perfdoctor,
		"github.com/perfdoctor/perfdoctor/casebook/cmd/casebook": &bin.casebook,
	})
}

// service is a running casebook variant.
type service struct {
	cmd           *exec.Cmd
	app, pprofURL string
	udp           string // host:port of a UDP ingress (R2), else ""
}

func start(t *testing.T, caseName, variant string) *service {
	t.Helper()
	cmd := exec.Command(bin.casebook, "-case", caseName, "-variant", variant, "-listen", "127.0.0.1:0", "-pprof", "127.0.0.1:0")
	s := &service{cmd: cmd}
	for _, f := range strings.Fields(harness.Start(t, cmd, "", 20*time.Second)) {
		if v, ok := strings.CutPrefix(f, "app="); ok {
			s.app = v
		}
		if v, ok := strings.CutPrefix(f, "pprof="); ok {
			s.pprofURL = v
		}
		if v, ok := strings.CutPrefix(f, "udp="); ok {
			s.udp = v
		}
	}
	if s.app == "" || s.pprofURL == "" {
		t.Fatalf("casebook %s/%s did not report its addresses", caseName, variant)
	}
	return s
}

// The load of every case: warmup before the window, window of collection,
// and the load runs on for 3 s after it, so that the end of the window is
// still under load.
const warmup, window = time.Second, 5 * time.Second

// loadConfig is the case's load on s: closed-loop HTTP GETs with 8 workers
// unless the case asks for more, or a DNS-style query per datagram to a UDP
// ingress.
func loadConfig(c serve.Case, s *service) load.Config {
	cfg := load.Config{URL: s.app, Concurrency: 8, Duration: warmup + window + 3*time.Second}
	if c.Concurrency > 0 {
		cfg.Concurrency = c.Concurrency
	}
	if s.udp != "" {
		// A query ID, then a question: what the relay forwards.
		cfg.URL, cfg.Body = "udp://"+s.udp, []byte("\x4a\x21 IN A api.payments.internal.example")
	}
	return cfg
}

// underLoad runs the case's load on s in the background from now on; the
// returned function stops it and reports its error (it may be called again).
func underLoad(c serve.Case, s *service) (stop func() error) {
	ctx, cancel := context.WithCancel(context.Background())
	loaded := make(chan error, 1)
	go func() {
		_, err := load.Run(ctx, loadConfig(c, s))
		loaded <- err
	}()
	return sync.OnceValue(func() error { cancel(); return <-loaded })
}

// keptDir is where the test keeps what it collected for case-variant test
// t: DIR/<case>-<variant>[suffix] under PERFDOCTOR_CASEBOOK_BUNDLES=DIR (in
// DIR/<toolchain>/ for a pass on another Go), to
// rerun diagnose on it while working on a rule; else a temporary directory.
func keptDir(t *testing.T, suffix string) string {
	keep := os.Getenv("PERFDOCTOR_CASEBOOK_BUNDLES")
	if keep == "" {
		return filepath.Join(t.TempDir(), "bundle")
	}
	if toolchain := os.Getenv(harness.ServiceToolchain); toolchain != "" {
		keep = filepath.Join(keep, toolchain) // a pass on another Go keeps its own
	}
	_, name, _ := strings.Cut(t.Name(), "/")
	dir := filepath.Join(keep, strings.ReplaceAll(name, "/", "-")+suffix)
	os.RemoveAll(dir)
	return dir
}

// diagnoseUnderLoad loads the service, collects a bundle with the
// perfdoctor binary while the load runs, and returns the JSON findings.
func diagnoseUnderLoad(t *testing.T, c serve.Case, s *service) []harness.Finding {
	t.Helper()
	stop := underLoad(c, s)
	defer stop()
	time.Sleep(warmup)
	bundleDir := keptDir(t, "")
	// A heap series: two snapshots cannot tell a leak from work in flight.
	out, err := exec.Command(bin.perfdoctor, "collect", s.pprofURL, "-d", window.String(), "--heap-every", "1s", "-o", bundleDir).CombinedOutput()
	if err != nil {
		t.Fatalf("perfdoctor collect: %v\n%s", err, out)
	}
	stop()
	doc := harness.Diagnose(t, bin.perfdoctor, bundleDir)
	if !doc.Inputs.System || !doc.Inputs.Metrics || doc.Inputs.Partial {
		t.Errorf("bundle incomplete: %+v", doc.Inputs)
	}
	if os.Getenv("PERFDOCTOR_CASEBOOK_BUNDLES") != "" {
		// A kept bundle is a recording: its expectations go with it, for
		// the offline test (casebook/recorded_test.go) to hold it to.
		variant := t.Name()[strings.LastIndexByte(t.Name(), '/')+1:]
		if err := os.WriteFile(filepath.Join(bundleDir, ruletest.WantFile), []byte(c.Want(variant, serviceGo())), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return doc.Findings
}

// TestCasebook runs every registered case live: each variant is a
// separate process under load, collected by `perfdoctor collect` and
// diagnosed (see expect for what each must show). PERFDOCTOR_CASEBOOK_PENDING=1
// runs the pending cases too.
func TestCasebook(t *testing.T) {
	runCases(t, "scorecard", serviceGo(), selected(serve.Cases()), diagnoseUnderLoad)
}

// selected is the cases named in PERFDOCTOR_CASEBOOK_CASES (comma
// separated; the README's test command runs one case per family so), else
// all of names.
func selected(names []string) []string {
	v := os.Getenv("PERFDOCTOR_CASEBOOK_CASES")
	if v == "" {
		return names
	}
	return strings.Split(v, ",")
}

// runCases runs both variants of each named case, each as its own process
// diagnosed by diagnose, checks them against the case's want for a service
// built with goVersion ("" asks nothing of a Go version) and logs the
// scorecard under title. Pending cases are skipped, visibly, unless
// PERFDOCTOR_CASEBOOK_PENDING is set.
func runCases(t *testing.T, title, goVersion string, names []string, diagnose func(*testing.T, serve.Case, *service) []harness.Finding) {
	var card scorecard
	defer func() { t.Log(title + ":\n" + card.String()) }()
	for _, name := range names {
		c, ok := serve.Lookup(name)
		if !ok {
			t.Fatalf("case %s is not registered", name)
		}
		if c.Pending != "" && os.Getenv("PERFDOCTOR_CASEBOOK_PENDING") == "" {
			card.pending(name, c.Class, c.Pending)
			t.Run(name, func(t *testing.T) { t.Skip("known gap: " + c.Pending) })
			continue
		}
		for _, variant := range serve.Variants {
			t.Run(name+"/"+variant, func(t *testing.T) {
				findings := diagnose(t, c, start(t, name, variant))
				defer func() { card.add(name, variant, c.Class, findings, !t.Failed()) }()
				for _, v := range violations(c, variant, goVersion, findings) {
					t.Error(v)
				}
			})
		}
	}
}

// serviceGo is the Go the services are built with.
func serviceGo() string {
	if v := os.Getenv(harness.ServiceToolchain); v != "" {
		return v
	}
	return runtime.Version()
}

// violations checks a variant's findings (harness.Whole, which Diagnose
// applies to every diagnosis, checks the CPU sum and the links) against its
// case's want (serve.Case.Want) with perfdoctor's rule test harness: the
// expectations the recorded bundles are held to offline.
func violations(c serve.Case, variant, goVersion string, findings []harness.Finding) []string {
	want, err := ruletest.Parse(strings.NewReader(c.Want(variant, goVersion)))
	if err != nil {
		return []string{"the case's want: " + err.Error()}
	}
	return ruletest.Violations(asResult(findings), want)
}

// asResult is the findings of diagnose --format json as the rules engine
// returned them.
func asResult(findings []harness.Finding) rules.Result {
	var res rules.Result
	for _, f := range findings {
		rf := rules.Finding{ID: f.ID, Rule: f.Rule, Class: f.Class, Summary: f.Summary, Fix: f.Fix, CausedBy: f.CausedBy,
			Resource: f.Resource, Impact: f.Impact}
		rf.Severity.UnmarshalText([]byte(f.Severity)) // the binary wrote it
		for _, e := range f.Evidence {
			rf.Evidence = append(rf.Evidence, rules.Fact{Name: e.Name, Value: e.Value, Num: e.Number})
		}
		res.Findings = append(res.Findings, rf)
	}
	return res
}

// never checks that class (if any) is not reported at all.
func never(t *testing.T, findings []harness.Finding, class string) {
	t.Helper()
	for _, f := range findings {
		if class != "" && f.Class == class {
			t.Errorf("%s reported (%s), which this case must never be: %s", f.Class, f.Severity, f.Summary)
		}
	}
}

// scorecard is one line per case and variant: what was expected, what came
// out on top, where the expected class ranked, and the verdict. The
// casebook README shows its latest output.
type scorecard struct{ lines []string }

func (s *scorecard) add(name, variant, class string, findings []harness.Finding, pass bool) {
	top, rank := "-", "-"
	if len(findings) > 0 {
		top = fmt.Sprintf("%s (%s, %.0f%%)", findings[0].Class, findings[0].Severity, findings[0].Impact*100)
	}
	for i, f := range findings {
		if class != "" && f.Class == class {
			rank = fmt.Sprintf("%d (%s)", i+1, f.Severity)
			break
		}
	}
	want := class
	switch {
	case class == "":
		want = "nothing above low"
	case variant == "fixed":
		want = class + " at most low"
	}
	verdict := "PASS"
	if !pass {
		verdict = "FAIL"
	}
	s.lines = append(s.lines, fmt.Sprintf("%-8s %-6s %-34s %-38s %-12s %s", name, variant, want, top, rank, verdict))
}

func (s *scorecard) pending(name, class, why string) {
	s.lines = append(s.lines, fmt.Sprintf("%-8s %-6s %-34s %-38s %-12s %s", name, "both", class, "-", "-", "PENDING: "+why))
}

func (s *scorecard) String() string {
	head := fmt.Sprintf("%-8s %-6s %-34s %-38s %-12s %s", "CASE", "VAR", "EXPECTED", "TOP FINDING", "RANK", "RESULT")
	return head + "\n" + strings.Join(s.lines, "\n")
}
