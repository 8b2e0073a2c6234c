package e2e

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/perfdoctor/perfdoctor/casebook/internal/harness"
	"github.com/perfdoctor/perfdoctor/casebook/serve"
)

// plainCases are the cases TestCasebookPlain runs by default: the ones
// written for root-cause diagnosis (issue 14), about 90 s for their 12
// variants. PERFDOCTOR_CASEBOOK_PLAIN=all runs every registered case
// (4-5 minutes more), PERFDOCTOR_CASEBOOK_PLAIN=r1,r3 those named.
var plainCases = []string{"r1", "r2", "r3", "r4", "r5", "r6"}

// plainProfiles are what a user saves from net/http/pprof with curl, under
// the names people give them: path and query on the pprof listener -> file.
// The CPU profile spans the window; the trace is one second from its middle;
// the rest are taken when the CPU profile returns, still under load.
var plainProfiles = []struct{ path, file string }{
	{fmt.Sprintf("/debug/pprof/profile?seconds=%d", int(window.Seconds())), "cpu.pprof"},
	{"/debug/pprof/trace?seconds=1", "trace.out"},
	{"/debug/pprof/heap", "heap.pb.gz"},
	{"/debug/pprof/allocs", "allocs.pb.gz"},
	{"/debug/pprof/goroutine", "goroutine.pb.gz"},
	{"/debug/pprof/mutex", "mutex.pb.gz"},
	{"/debug/pprof/block", "block.pb.gz"},
}

// plainJunk are files that land in such folders and are not evidence:
// diagnose must skip them, with a reason.
var plainJunk = []string{"README.md", "host-stat.txt"}

// TestCasebookPlain runs the cases as a user without perfdoctor's collector
// would: the profiles saved with curl into a plain folder (no manifest, no
// /proc snapshots, no runtime metrics), along with unrelated files, under
// the same load as TestCasebook, then `perfdoctor diagnose DIR`. The same
// expectations hold.
func TestCasebookPlain(t *testing.T) {
	names := plainCases
	switch v := os.Getenv("PERFDOCTOR_CASEBOOK_PLAIN"); v {
	case "":
	case "all":
		names = serve.Cases()
	default:
		names = strings.Split(v, ",")
	}
	runCases(t, "scorecard (plain folders)", "", names, diagnosePlain)
}

// diagnosePlain loads the service, saves its profiles into a plain folder
// as curl would, diagnoses the folder and returns the findings.
func diagnosePlain(t *testing.T, c serve.Case, s *service) []harness.Finding {
	t.Helper()
	stop := underLoad(c, s)
	defer stop()
	time.Sleep(warmup)
	dir := keptDir(t, "-plain")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := savePlain(s.pprofURL, dir); err != nil {
		t.Fatal(err)
	}
	if err := stop(); err != nil {
		t.Fatalf("load: %v", err)
	}
	junk := "Profiles saved with curl from " + s.pprofURL + "/debug/pprof/ while the load ran.\n"
	if err := os.WriteFile(filepath.Join(dir, "README.md"), []byte(junk), 0o644); err != nil {
		t.Fatal(err)
	}
	// A copy of the host's /proc/stat, as people attach "for context":
	// nothing says when it was taken, so it is not a snapshot of the window.
	stat, err := os.ReadFile("/proc/stat")
	if err != nil {
		stat = []byte("cpu  1 2 3 4 5 6 7 8 9 10\nctxt 12345\nbtime 1700000000\nprocesses 42\n")
	}
	if err := os.WriteFile(filepath.Join(dir, "host-stat.txt"), stat, 0o644); err != nil {
		t.Fatal(err)
	}

	doc := harness.Diagnose(t, bin.perfdoctor, dir)
	in := doc.Inputs
	if !slices.Contains(in.Profiles, "cpu") || !in.Trace {
		t.Errorf("diagnose did not read the CPU profile and the trace: profiles %v, trace %t", in.Profiles, in.Trace)
	}
	var skipped []string
	for _, f := range in.Skipped {
		skipped = append(skipped, filepath.Base(f.Path))
		if !slices.Contains(plainJunk, filepath.Base(f.Path)) {
			t.Errorf("diagnose skipped a saved profile: %s (%s)", f.Path, f.Reason)
		}
	}
	for _, j := range plainJunk {
		if !slices.Contains(skipped, j) {
			t.Errorf("diagnose did not skip %s (skipped: %v)", j, skipped)
		}
	}
	return doc.Findings
}

// savePlain fetches plainProfiles from the pprof endpoint at base into dir:
// the CPU profile, the trace from its middle, then the snapshots.
func savePlain(base, dir string) error {
	client := &http.Client{Timeout: window + 15*time.Second}
	get := func(path, file string) error {
		resp, err := client.Get(base + path)
		if err != nil {
			return fmt.Errorf("GET %s: %w", path, err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
			return fmt.Errorf("GET %s: %s: %s", path, resp.Status, strings.TrimSpace(string(msg)))
		}
		f, err := os.Create(filepath.Join(dir, file))
		if err != nil {
			return err
		}
		if _, err := io.Copy(f, resp.Body); err != nil {
			f.Close()
			return fmt.Errorf("GET %s: %w", path, err)
		}
		return f.Close()
	}
	var wg sync.WaitGroup
	errs := make([]error, len(plainProfiles))
	wg.Add(2)
	go func() { defer wg.Done(); errs[0] = get(plainProfiles[0].path, plainProfiles[0].file) }()
	go func() {
		defer wg.Done()
		time.Sleep(window/2 - time.Second/2)
		errs[1] = get(plainProfiles[1].path, plainProfiles[1].file)
	}()
	wg.Wait()
	for i, p := range plainProfiles[2:] {
		errs[i+2] = get(p.path, p.file)
	}
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
