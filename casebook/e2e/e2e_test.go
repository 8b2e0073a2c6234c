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
	"go/version"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
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
	return doc.Findings
}

// TestCasebook runs every registered case live: each variant is a
// separate process under load, collected by `perfdoctor collect` and
// diagnosed (see expect for what each must show). PERFDOCTOR_CASEBOOK_PENDING=1
// runs the pending cases too.
func TestCasebook(t *testing.T) {
	runCases(t, "scorecard", serve.Cases(), func(t *testing.T, c serve.Case, s *service) []harness.Finding {
		findings := diagnoseUnderLoad(t, c, s)
		if strings.HasSuffix(t.Name(), "/bad") {
			expectProof(t, c, serviceGo(), findings)
		}
		return findings
	})
}

// runCases runs both variants of each named case, each as its own process
// diagnosed by diagnose, checks them with expect and logs the scorecard
// under title. Pending cases are skipped, visibly, unless
// PERFDOCTOR_CASEBOOK_PENDING is set.
func runCases(t *testing.T, title string, names []string, diagnose func(*testing.T, serve.Case, *service) []harness.Finding) {
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
				expect(t, c, variant, findings)
			})
		}
	}
}

// expect fails t with each of the variant's violations of its case.
func expect(t *testing.T, c serve.Case, variant string, findings []harness.Finding) {
	t.Helper()
	for _, v := range violations(c, variant, findings) {
		t.Error(v)
	}
}

// serviceGo is the Go the services are built with.
func serviceGo() string {
	if v := os.Getenv(harness.ServiceToolchain); v != "" {
		return v
	}
	return runtime.Version()
}

// expectProof fails t when the top finding of a bad variant built with
// goVersion lacks the evidence its case requires from that Go on.
func expectProof(t *testing.T, c serve.Case, goVersion string, findings []harness.Finding) {
	t.Helper()
	for _, v := range proofViolations(c, goVersion, findings) {
		t.Error(v)
	}
}

func proofViolations(c serve.Case, goVersion string, findings []harness.Finding) []string {
	var out []string
	for _, since := range slices.Sorted(maps.Keys(c.ProofFrom)) {
		fact := c.ProofFrom[since]
		if version.Compare(goVersion, since) < 0 {
			continue
		}
		if len(findings) == 0 || !slices.ContainsFunc(findings[0].Evidence, func(f harness.Fact) bool { return f.Name == fact }) {
			out = append(out, fmt.Sprintf("built with %s (%s or newer), the top finding does not cite %q", goVersion, since, fact))
		}
	}
	return out
}

// violations checks a variant's findings against its case (harness.Whole,
// which Diagnose applies to every diagnosis, checks the CPU sum and the
// links). On the bad variant the top
// finding must be the case's class at high severity, each of AlsoTop3 must
// be among the first three, and each symptom of Below that is reported must
// rank below its cause. The fixed variant must not show the class above
// low, nor anything at high. A case without a class is a healthy control:
// nothing above low on either variant.
func violations(c serve.Case, variant string, findings []harness.Finding) []string {
	var out []string
	for _, f := range findings {
		if c.Never != "" && f.Class == c.Never {
			out = append(out, fmt.Sprintf("%s reported (%s): this case must never be called that: %s", f.Class, f.Severity, f.Summary))
		}
	}
	if c.Class == "" || variant != "bad" {
		if variant == "fixed" && len(c.FixedKeeps) > 0 {
			findings = slices.DeleteFunc(slices.Clone(findings), func(f harness.Finding) bool { return c.FixedKeeps[f.Class] != "" })
		}
		class := c.Class
		if class == "" {
			// A control; with Never, a case of what that class must not be
			// mistaken for, whose own symptoms may show at medium.
			class = c.Never
		}
		return append(out, quiet(findings, class)...)
	}
	rank := func(class string) int {
		for i, f := range findings {
			if f.Class == class {
				return i
			}
		}
		return -1
	}
	switch {
	case len(findings) == 0 || findings[0].Class != c.Class:
		out = append(out, fmt.Sprintf("top finding is not %s: %+v", c.Class, findings))
	case findings[0].Severity != "high":
		out = append(out, fmt.Sprintf("top finding severity %s, want high", findings[0].Severity))
	}
	// A second problem must be among the first three problems: symptoms,
	// shown under their causes, are not problems of their own.
	rootRank := func(class string) int {
		n := 0
		for _, f := range findings {
			if f.CausedBy != "" {
				continue
			}
			if f.Class == class {
				return n
			}
			n++
		}
		return -1
	}
	for _, class := range c.AlsoTop3 {
		if r := rootRank(class); r < 0 || r > 2 {
			out = append(out, fmt.Sprintf("%s is not among the first three findings (rank %s)", class, rankName(r)))
		}
	}
	for _, symptom := range slices.Sorted(maps.Keys(c.Below)) {
		cause := c.Below[symptom]
		if rs, rc := rank(symptom), rank(cause); rs >= 0 && (rc < 0 || rs < rc) {
			out = append(out, fmt.Sprintf("symptom %s ranks %s, above its cause %s (rank %s)", symptom, rankName(rs), cause, rankName(rc)))
		}
	}
	return out
}

// rankName is a 0-based rank as people count it, or "absent".
func rankName(r int) string {
	if r < 0 {
		return "absent"
	}
	return fmt.Sprint(r + 1)
}

// quiet lists the findings at high, and class (if any) above low; with no
// class, anything above low.
func quiet(findings []harness.Finding, class string) []string {
	var out []string
	for _, f := range findings {
		if f.Class == class && (f.Severity == "high" || f.Severity == "medium") {
			out = append(out, fmt.Sprintf("%s still reported at %s: %s", f.Class, f.Severity, f.Summary))
		}
		if f.Severity == "high" || (class == "" && f.Severity == "medium") {
			out = append(out, fmt.Sprintf("unexpected %s finding: %+v", f.Severity, f))
		}
	}
	return out
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
