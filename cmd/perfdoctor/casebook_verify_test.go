package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/perfdoctor/perfdoctor/casebook/serve"
)

// casebookVerify runs perfdoctor verify on one casebook case, bad before and
// fixed after, each variant started by verify itself from the casebook
// binary on its own loopback port, with the runtime's default GOGC and
// GOMEMLIMIT (the bad variants depend on them).
func casebookVerify(t *testing.T, bin, caseName string, flags ...string) (code int, v verifyJSON, stderr string) {
	t.Helper()
	start := func(variant, addr string) string {
		return fmt.Sprintf("exec env -u GOGC -u GOMEMLIMIT %s -case %s -variant %s -listen %s", bin, caseName, variant, addr)
	}
	bad, fixed := closedPort(t), closedPort(t)
	args := append([]string{"verify", "--format", "json",
		"--before-cmd", start("bad", bad), "--before", "http://" + bad + "/",
		"--after-cmd", start("fixed", fixed), "--after", "http://" + fixed + "/"}, flags...)
	code, stdout, stderr := perfdoctor(t, args...)
	if err := json.Unmarshal([]byte(stdout), &v); err != nil && code != exitError {
		t.Fatalf("%s: verify output is not JSON (exit %d): %v\n%s%s", caseName, code, err, stdout, stderr)
	}
	return code, v, stderr
}

type verifyJSON struct {
	Verdict string
	Ratios  []verifyRatio
	Rounds  []struct {
		Before, After struct {
			Throughput float64 `json:"throughput_rps"`
			Latency    struct {
				P99 float64 `json:"p99_ms"`
			}
		}
	}
	LoadAverage float64 `json:"load_average"`
}

type verifyRatio struct {
	Figure string
	Ratio  float64
	Low    float64 `json:"ci95_low"`
	High   float64 `json:"ci95_high"`
	Change string
}

// casebookBuild is the casebook binary, built once per run of the
// package: the verify, try and PGO tests all start it, and each built it
// anew (a link of the whole casebook, 2 to 5 s each on 2 cores).
var casebookBuild struct {
	once     sync.Once
	bin, out string
	err      error
}

// buildCasebook returns the casebook binary, building it on first use; it
// lives in a directory of its own, removed when the package's tests end.
func buildCasebook(t *testing.T) string {
	t.Helper()
	casebookBuild.once.Do(func() {
		dir, err := os.MkdirTemp("", "perfdoctor-casebook")
		if err != nil {
			casebookBuild.err = err
			return
		}
		afterTests(func() { os.RemoveAll(dir) })
		bin := filepath.Join(dir, "casebook")
		out, err := exec.Command("go", "build", "-o", bin, "github.com/perfdoctor/perfdoctor/casebook/cmd/casebook").CombinedOutput()
		casebookBuild.bin, casebookBuild.out, casebookBuild.err = bin, string(out), err
	})
	if casebookBuild.err != nil {
		t.Fatalf("building the casebook: %v\n%s", casebookBuild.err, casebookBuild.out)
	}
	return casebookBuild.bin
}

// TestVerifyCasebook is the CI check that verify proves the casebook's
// fixes: two cases whose fixed variant is several times faster, short
// rounds. The full table in casebook/README.md comes from
// TestVerifyCasebookAll.
func TestVerifyCasebook(t *testing.T) {
	if testing.Short() {
		t.Skip("starts casebook services")
	}
	bin := buildCasebook(t)
	for _, c := range []string{"b2", "a4"} {
		code, v, stderr := casebookVerify(t, bin, c, "--rounds", "3", "-d", "1s", "--warmup", "500ms", "-c", "16")
		if code != 0 || v.Verdict != "faster" || len(v.Ratios) == 0 || v.Ratios[0].Ratio <= 1 {
			t.Errorf("%s: exit %d, verdict %q, ratios %+v\n%s", c, code, v.Verdict, v.Ratios, stderr)
		}
		// The services are local: verify also reads their CPU time, and
		// both fixes cut the CPU each request costs.
		i := slices.IndexFunc(v.Ratios, func(r verifyRatio) bool { return r.Figure == "CPU/request" })
		if i < 0 || v.Ratios[i].Ratio >= 1 || v.Ratios[i].Change != "better" {
			t.Errorf("%s: CPU per request not better: %+v", c, v.Ratios)
		}
	}
}

// TestVerifyCasebookAll measures every case (opt-in, ~10 minutes):
//
//	PERFDOCTOR_CASEBOOK_VERIFY=/tmp/table.md go test -run TestVerifyCasebookAll -timeout 30m ./cmd/perfdoctor
//
// and writes the Markdown table casebook/README.md quotes.
func TestVerifyCasebookAll(t *testing.T) {
	out := os.Getenv("PERFDOCTOR_CASEBOOK_VERIFY")
	if out == "" {
		t.Skip("set PERFDOCTOR_CASEBOOK_VERIFY=FILE to measure every case")
	}
	bin := buildCasebook(t)
	var b strings.Builder
	b.WriteString("| Case | Bad req/s | Fixed req/s | Throughput fixed/bad [95% CI] | p99 fixed/bad [95% CI] | Verdict | Load avg |\n|---|---:|---:|---|---|---|---:|\n")
	for _, c := range serve.Cases() {
		code, v, stderr := casebookVerify(t, bin, c, "--rounds", "4", "-d", "3s", "--warmup", "1s", "-c", "16")
		if len(v.Ratios) < 3 || len(v.Rounds) == 0 {
			fmt.Fprintf(&b, "| %s | - | - | - | - | error (exit %d): %s | - |\n", strings.ToUpper(c), code, oneLine(strings.TrimSpace(lastLine(stderr))))
			continue
		}
		var bad, fixed float64
		for _, r := range v.Rounds {
			bad += r.Before.Throughput / float64(len(v.Rounds))
			fixed += r.After.Throughput / float64(len(v.Rounds))
		}
		tp, p99 := v.Ratios[0], v.Ratios[2]
		fmt.Fprintf(&b, "| %s | %.0f | %.0f | %.2fx [%.2f, %.2f] | %.2fx [%.2f, %.2f] | %s | %.1f |\n", strings.ToUpper(c), bad, fixed,
			tp.Ratio, tp.Low, tp.High, p99.Ratio, p99.Low, p99.High, v.Verdict, v.LoadAverage)
	}
	t.Log("\n" + b.String())
	if err := os.WriteFile(out, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}
