// Package e2e runs perfdoctor end to end against the casebook services, as
// a user would: the service is a separate process that only imports
// net/http/pprof, load comes from outside it, and perfdoctor's own binary
// collects and diagnoses. These are the project's acceptance tests.
package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/perfdoctor/perfdoctor/casebook/internal/harness"
	"github.com/perfdoctor/perfdoctor/casebook/serve"
	"github.com/perfdoctor/perfdoctor/load"
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
	}
	if s.app == "" || s.pprofURL == "" {
		t.Fatalf("casebook %s/%s did not report its addresses", caseName, variant)
	}
	return s
}

// diagnoseUnderLoad loads the service, collects a bundle with the
// perfdoctor binary while the load runs, and returns the JSON findings.
//
// PERFDOCTOR_CASEBOOK_BUNDLES=DIR keeps each bundle as DIR/<case>-<variant>,
// to rerun diagnose on it while working on a rule.
func diagnoseUnderLoad(t *testing.T, s *service) []harness.Finding {
	t.Helper()
	const warmup, window = time.Second, 5 * time.Second
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	loaded := make(chan error, 1)
	go func() {
		_, err := load.Run(ctx, load.Config{URL: s.app, Concurrency: 8, Duration: warmup + window + 3*time.Second})
		loaded <- err
	}()
	time.Sleep(warmup)
	bundleDir := filepath.Join(t.TempDir(), "bundle")
	if keep := os.Getenv("PERFDOCTOR_CASEBOOK_BUNDLES"); keep != "" {
		bundleDir = filepath.Join(keep, strings.ReplaceAll(strings.TrimPrefix(t.Name(), "TestCasebook/"), "/", "-"))
		os.RemoveAll(bundleDir)
	}
	out, err := exec.Command(bin.perfdoctor, "collect", s.pprofURL, "-d", window.String(), "-o", bundleDir).CombinedOutput()
	if err != nil {
		t.Fatalf("perfdoctor collect: %v\n%s", err, out)
	}
	cancel()
	<-loaded
	doc := harness.Diagnose(t, bin.perfdoctor, bundleDir)
	if !doc.Inputs.System || !doc.Inputs.Metrics || doc.Inputs.Partial {
		t.Errorf("bundle incomplete: %+v", doc.Inputs)
	}
	return doc.Findings
}

// TestCasebook runs every registered case: the bad variant's top finding
// must be the case's class (at high severity), and the fixed variant must not
// show that class above low, nor anything at high. A case without a class is
// a healthy control: nothing above low on either variant.
// PERFDOCTOR_CASEBOOK_PENDING=1 runs the pending cases too.
func TestCasebook(t *testing.T) {
	var card scorecard
	defer func() { t.Log("scorecard:\n" + card.String()) }()
	for _, name := range serve.Cases() {
		c, _ := serve.Lookup(name)
		if c.Pending != "" && os.Getenv("PERFDOCTOR_CASEBOOK_PENDING") == "" {
			card.pending(name, c.Class, c.Pending)
			t.Run(name, func(t *testing.T) { t.Skip("known gap: " + c.Pending) })
			continue
		}
		t.Run(name+"/bad", func(t *testing.T) {
			findings := diagnoseUnderLoad(t, start(t, name, "bad"))
			defer func() { card.add(name, "bad", c.Class, findings, !t.Failed()) }()
			never(t, findings, c.Never)
			if c.Class == "" {
				// A control; with Never, a case of what that class must not
				// be mistaken for, whose own symptoms may show at medium.
				quiet(t, findings, c.Never)
				return
			}
			if len(findings) == 0 || findings[0].Class != c.Class {
				t.Fatalf("top finding is not %s: %+v", c.Class, findings)
			}
			if findings[0].Severity != "high" {
				t.Errorf("top finding severity %s, want high", findings[0].Severity)
			}
		})
		t.Run(name+"/fixed", func(t *testing.T) {
			findings := diagnoseUnderLoad(t, start(t, name, "fixed"))
			defer func() { card.add(name, "fixed", c.Class, findings, !t.Failed()) }()
			never(t, findings, c.Never)
			quiet(t, findings, c.Class)
		})
	}
}

// quiet checks that nothing is high, and that class (if any) is at most low.
func quiet(t *testing.T, findings []harness.Finding, class string) {
	t.Helper()
	for _, f := range findings {
		if f.Class == class && (f.Severity == "high" || f.Severity == "medium") {
			t.Errorf("%s still reported at %s: %s", f.Class, f.Severity, f.Summary)
		}
		if f.Severity == "high" || (class == "" && f.Severity == "medium") {
			t.Errorf("unexpected %s finding: %+v", f.Severity, f)
		}
	}
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
