package calibrate

import (
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// recorded is a part of one full run of cmd/calibrate (testdata/results.json):
// a CPU case, a case with two problems and a symptom (R1), a memory case, a
// limit (E2), a latency case, a control and a case that failed to start.
func recorded(t *testing.T) map[string]*Result {
	t.Helper()
	b, err := os.ReadFile("testdata/results.json")
	if err != nil {
		t.Fatal(err)
	}
	var rs []*Result
	if err := json.Unmarshal(b, &rs); err != nil {
		t.Fatal(err)
	}
	m := map[string]*Result{}
	for _, r := range rs {
		m[r.Case] = r
	}
	return m
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

func TestPredict(t *testing.T) {
	rs := recorded(t)

	// A CPU share s: CPU per request x(1-s); throughput (c+g)/(c(1-s)+g)
	// with the generator's CPU per request g on the same CPUs.
	c4 := rs["c4"]
	p := Predict(c4)
	s := c4.Findings[0].Impact
	c, g := c4.BadCPU, c4.GeneratorCPU
	if p.Kind != KindCPU || !near(p.Share, s) || !near(p.CPU, 1-s) || !near(p.Dedicated, 1/(1-s)) || !near(p.Throughput, (c+g)/(c*(1-s)+g)) {
		t.Errorf("c4: %+v (s %.3f, c %.1f, g %.1f)", p, s, c, g)
	}
	if p.Throughput >= p.Dedicated || p.Throughput <= 1 {
		t.Errorf("c4: the generator's share must damp the throughput gain: %+v", p)
	}

	// R1's fixed variant fixes both problems: the regexp compilation with
	// the GC it drives (its symptom) and the string formatting.
	r1 := rs["r1"]
	want := 0.0
	for _, f := range r1.Findings {
		if f.Class == "regexp-compile-hot" || f.CausedBy == "LIB007" || f.Class == "string-formatting" {
			want += f.Impact
		}
	}
	if p := Predict(r1); !near(p.Share, want) || len(r1.AlsoFixed) == 0 {
		t.Errorf("r1: share %.3f, want %.3f (also fixed %v)", p.Share, want, r1.AlsoFixed)
	}

	// Latency predicts the closed loop's throughput and no CPU.
	if p := Predict(rs["l2"]); p.Kind != KindLatency || p.CPU != 0 || !near(p.Throughput, 1/(1-rs["l2"].Findings[0].Impact)) {
		t.Errorf("l2: %+v", p)
	}
	for name, kind := range map[string]string{"b2": KindMemory, "e2": KindCapacity, "control": KindControl} {
		if p := Predict(rs[name]); p.Kind != kind {
			t.Errorf("%s: kind %s, want %s", name, p.Kind, kind)
		}
	}
	missed := *c4
	missed.Class = "logging-cost"
	if p := Predict(&missed); p.Kind != KindMissed || p.CPU != 0 {
		t.Errorf("a top finding of another class predicted %+v", p)
	}
}

func TestScoreAndSummarize(t *testing.T) {
	rs := recorded(t)
	a2 := rs["a2"]
	e := Score(a2, Predict(a2))
	if !near(e.CPULog, math.Log((1-a2.Findings[0].Impact)/a2.CPU.Ratio)) || !near(e.CPUPoints, 100*((1-a2.CPU.Ratio)-a2.Findings[0].Impact)) {
		t.Errorf("a2 errors %+v", e)
	}
	var all []*Result
	for _, r := range rs {
		all = append(all, r)
	}
	s := Summarize(all)
	// Scored: a2, c4, r1 on CPU; those and l2 on throughput. The control,
	// memory, limit and failed cases are not.
	if s.CPUCases != 3 || s.ThroughputCases != 4 || math.IsNaN(s.CPUPoints) || s.CPUPoints <= 0 {
		t.Errorf("summary %+v", s)
	}
	// The log bias is the median of the three signed CPU errors.
	var logs []float64
	for _, c := range []string{"a2", "c4", "r1"} {
		logs = append(logs, Score(rs[c], Predict(rs[c])).CPULog)
	}
	slices.Sort(logs)
	if !near(s.CPULogBias, logs[1]) {
		t.Errorf("CPU log bias %.3f, want the median of %v", s.CPULogBias, logs)
	}

	// A stated range: the measured CPU ratio is inside it when the shares
	// it spans bracket the saving measured; a point estimate holds it only
	// where it is exact.
	ranged := *a2
	ranged.Findings = append([]Finding(nil), a2.Findings...)
	saved := 1 - a2.CPU.Ratio
	ranged.Findings[0].ImpactRange = &[2]float64{saved - 0.05, saved + 0.05}
	p := Predict(&ranged)
	if !inRange(a2.CPU.Ratio, p.CPURange) || p.CPURange[0] >= p.CPURange[1] || p.ThroughputRange[0] >= p.ThroughputRange[1] {
		t.Errorf("a2 with a range around its measured saving: %+v", p)
	}
	if s := Summarize([]*Result{&ranged}); s.CPUInRange != 1 {
		t.Errorf("ranged a2 inside its range: %+v", s)
	}
	if s := Summarize([]*Result{a2}); s.CPUInRange != 0 {
		t.Errorf("a2's point estimate %.3f counted inside for a measured %.3f", 1-a2.Findings[0].Impact, a2.CPU.Ratio)
	}
}

func TestTableAndSplice(t *testing.T) {
	rs := recorded(t)
	var list []*Result
	for _, n := range []string{"a2", "b2", "c4", "control", "d1", "e2", "l2", "r1"} {
		list = append(list, rs[n])
	}
	table := Table(list)
	for _, want := range []string{
		"Load average ", "| Case |",
		"| A2 | metrics-summary-cost high (31% of cpu) | 0.69x | 0.69x [",
		"| B2 | oversized-allocation high (100% of memory): memory, not scored | - |",
		"| CONTROL | hot-function low (14% of cpu), control: same code both sides | 1.00x |",
		"| D1 | error: starting d1/bad",
		"| E2 | ephemeral-port-exhaustion high (100% of latency): a limit, not scored |",
		"Scored: CPU per request on 3 cases",
	} {
		if !strings.Contains(table, want) {
			t.Errorf("table lacks %q:\n%s", want, table)
		}
	}

	readme := filepath.Join(t.TempDir(), "README.md")
	doc := "# Casebook\n\nbefore\n" + BeginMarker + "\nold table\n" + EndMarker + "\nafter\n"
	if err := os.WriteFile(readme, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Splice(readme, table); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(readme)
	if want := "# Casebook\n\nbefore\n" + BeginMarker + "\n" + table + EndMarker + "\nafter\n"; string(got) != want {
		t.Errorf("spliced:\n%s", got)
	}
	if err := os.WriteFile(readme, []byte("no markers"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Splice(readme, table); err == nil || !strings.Contains(err.Error(), "no calibration markers") {
		t.Errorf("splice without markers: %v", err)
	}
}

// TestMeasureOneCase runs the whole measurement on B2, whose fixed variant
// is an order of magnitude cheaper, with the shortest settings: the binaries
// built, the bad variant diagnosed under load, verify's rounds.
func TestMeasureOneCase(t *testing.T) {
	if testing.Short() {
		t.Skip("starts casebook services")
	}
	dir := t.TempDir()
	o := Options{Window: 2 * time.Second, Rounds: 2, Duration: 500 * time.Millisecond, Warmup: 200 * time.Millisecond}
	for pkg, bin := range map[string]*string{"../cmd/casebook": &o.Casebook, "../../cmd/perfdoctor": &o.Perfdoctor} {
		*bin = filepath.Join(dir, filepath.Base(pkg))
		if out, err := exec.Command("go", "build", "-o", *bin, pkg).CombinedOutput(); err != nil {
			t.Fatalf("go build %s: %v\n%s", pkg, err, out)
		}
	}
	r := Measure(t.Context(), "b2", o)
	t.Log(Line(r))
	if r.Err != "" || r.Class != "oversized-allocation" || r.Rounds != 2 || len(r.Findings) == 0 {
		t.Fatalf("b2: %+v", r)
	}
	if r.Throughput == nil || r.Throughput.Ratio <= 1 || r.CPU == nil || r.CPU.Ratio >= 1 || r.BadCPU <= 0 || r.GeneratorCPU <= 0 {
		t.Errorf("b2's fix must measure faster and cheaper: throughput %s, CPU %s, bad %.0f µs, generator %.0f µs", r.Throughput, r.CPU, r.BadCPU, r.GeneratorCPU)
	}
	if !strings.Contains(Table([]*Result{r}), "| B2 | ") {
		t.Errorf("no B2 row")
	}
}

// The table in casebook/README.md is the one the command generated from
// the results it saved (testdata/calibration.json), not edited by hand.
func TestREADMETableIsGenerated(t *testing.T) {
	b, err := os.ReadFile("testdata/calibration.json")
	if err != nil {
		t.Fatal(err)
	}
	var rs []*Result
	if err := json.Unmarshal(b, &rs); err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	want := BeginMarker + "\n" + Table(rs) + EndMarker
	if !strings.Contains(string(readme), want) {
		t.Errorf("casebook/README.md's calibration table differs from the one testdata/calibration.json gives: run go run ./casebook/cmd/calibrate -from casebook/calibrate/testdata/calibration.json")
	}
}
