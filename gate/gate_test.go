package gate

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/perfdoctor/perfdoctor/report"
	"github.com/perfdoctor/perfdoctor/rules"
)

// benchText is go test -bench output: header lines, count runs of two
// benchmarks whose ns/op is scaled by slow, and the trailer.
func benchText(slow float64, count int) string {
	var b strings.Builder
	b.WriteString("goos: linux\ngoarch: amd64\npkg: example.com/svc\ncpu: a CPU\n")
	for i := range count {
		jitter := 1 + 0.01*float64(i%3-1) // -1%, 0, +1%
		fmt.Fprintf(&b, "BenchmarkParse-2   \t  100000\t %.1f ns/op\t  512 B/op\t 4 allocs/op\n", 1000*slow*jitter)
		fmt.Fprintf(&b, "BenchmarkEncode-2  \t  200000\t %.1f ns/op\n", 500*jitter)
	}
	b.WriteString("PASS\nok  \texample.com/svc\t3.2s\n")
	return b.String()
}

func parse(t *testing.T, text string) *Benchmarks {
	t.Helper()
	b, err := ParseBenchmarks(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestParseBenchmarks(t *testing.T) {
	b := parse(t, benchText(1, 6))
	if want := []string{"example.com/svc.BenchmarkParse-2", "example.com/svc.BenchmarkEncode-2"}; fmt.Sprint(b.Order) != fmt.Sprint(want) {
		t.Errorf("order %v, want %v", b.Order, want)
	}
	parseRuns := b.Runs["example.com/svc.BenchmarkParse-2"]
	if len(parseRuns["ns/op"]) != 6 || len(parseRuns["allocs/op"]) != 6 || parseRuns["ns/op"][1] != 1000 {
		t.Errorf("Parse runs: %v", parseRuns)
	}
	for _, bad := range []struct{ text, want string }{
		{"PASS\nok x 1s\n", "no benchmark results"},
		{"BenchmarkX-2 100 12x3 ns/op\n", `"12x3" is not a number`},
	} {
		_, err := ParseBenchmarks(strings.NewReader(bad.text))
		if err == nil || !strings.Contains(err.Error(), bad.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%q: error %v, want one line with %q", bad.text, err, bad.want)
		}
	}
}

func TestJudgeBenchmarks(t *testing.T) {
	base := parse(t, benchText(1, 6))
	same, err := JudgeBenchmarks(base, parse(t, benchText(1, 6)), 0.02)
	if err != nil {
		t.Fatal(err)
	}
	if same.Verdict != Pass {
		t.Errorf("A/A: %s (%s)", same.Verdict, same.Why)
	}
	slower, err := JudgeBenchmarks(base, parse(t, benchText(1.5, 6)), 0.02)
	if err != nil {
		t.Fatal(err)
	}
	if slower.Verdict != Regression || !strings.Contains(slower.Why, "BenchmarkParse-2 ns/op +50.0%") || strings.Contains(slower.Why, "Encode") {
		t.Errorf("planted 50%%: %s (%s)", slower.Verdict, slower.Why)
	}
	// B/op is shown, not judged, even where it differs.
	for _, f := range slower.Figures {
		if f.Judged != (f.Unit == "ns/op") {
			t.Errorf("%s judged=%v", f.Name, f.Judged)
		}
	}
	// A regression under the threshold passes.
	if r, _ := JudgeBenchmarks(base, parse(t, benchText(1.5, 6)), 0.6); r.Verdict != Pass {
		t.Errorf("50%% under a 60%% threshold: %s", r.Verdict)
	}
	if _, err := JudgeBenchmarks(base, parse(t, benchText(1, 1)), 0.02); err == nil || !strings.Contains(err.Error(), "-count") {
		t.Errorf("one run: %v", err)
	}
}

func TestChangedFindings(t *testing.T) {
	f := func(rule string, impact float64) rules.Finding {
		return rules.Finding{Rule: rule, Impact: impact, Severity: rules.SeverityFor(impact), Resource: "cpu", Summary: rule + " summary"}
	}
	base := &report.Report{Findings: []rules.Finding{f("CPU001", 0.30), f("GC001", 0.10)}}
	head := &report.Report{Findings: []rules.Finding{f("CPU001", 0.31), f("GC001", 0.20), f("NET001", 0.05), f("NET001", 0.04)}}
	got := ChangedFindings(base, head)
	if len(got) != 2 || got[0].Rule != "GC001" || got[0].New || got[1].Rule != "NET001" || !got[1].New {
		t.Fatalf("changed findings: %+v (want GC001 grown, NET001 new; CPU001's 1 point is noise)", got)
	}
}

func TestMarkdown(t *testing.T) {
	r, err := JudgeBenchmarks(parse(t, benchText(1, 6)), parse(t, benchText(1.5, 6)), 0.02)
	if err != nil {
		t.Fatal(err)
	}
	r.Base, r.Head = "base.txt", "head.txt"
	r.DiffNote = "no --base-profile and --head-profile were given"
	r.Findings = []FindingChange{{Rule: "CPU001", Severity: "high", Summary: "parse | spends 40%", Resource: "cpu", HeadImpact: 0.4, New: true}}
	var b bytes.Buffer
	if err := r.WriteMarkdown(&b); err != nil {
		t.Fatal(err)
	}
	md := b.String()
	for _, want := range []string{
		Marker, "## ❌ perfdoctor gate: performance regression", "**Verdict: regression.**",
		"| example.com/svc.BenchmarkParse-2 ns/op | 1000 ns/op | 1500 ns/op | +50.0% |", "| **worse** |",
		"6 runs a side.", "No profile diff: no --base-profile and --head-profile were given.",
		"- **CPU001** (high; new, 40% of cpu): parse \\| spends 40%", "Method: Welch's t-test",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("comment lacks %q:\n%s", want, md)
		}
	}
	// Every table row has the header's six cells.
	for _, line := range strings.Split(md, "\n") {
		if strings.HasPrefix(line, "| ") && strings.Count(strings.ReplaceAll(line, "\\|", ""), "|") != 7 {
			t.Errorf("row with a wrong cell count: %q", line)
		}
	}
}

// Save writes the comment and the JSON verdict, and the diff only when
// the profiles were diffed.
func TestSave(t *testing.T) {
	res, err := JudgeBenchmarks(parse(t, benchText(1, 10)), parse(t, benchText(1.2, 10)), 0.05)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := res.Save(dir); err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile(filepath.Join(dir, "gate.md"))
	if err != nil || !strings.HasPrefix(string(md), Marker) {
		t.Errorf("gate.md: %v\n%s", err, md)
	}
	var back Result
	if b, err := os.ReadFile(filepath.Join(dir, "gate.json")); err != nil || json.Unmarshal(b, &back) != nil || back.Verdict != res.Verdict || back.Verdict != Regression {
		t.Errorf("gate.json: %v, verdict %q, want %q", err, back.Verdict, Regression)
	}
	if _, err := os.Stat(filepath.Join(dir, "diff.html")); !os.IsNotExist(err) {
		t.Errorf("diff.html without a diff: %v", err)
	}
	if err := res.Save(filepath.Join(dir, "gate.md")); err == nil {
		t.Error("saving under a file: no error")
	}
}
