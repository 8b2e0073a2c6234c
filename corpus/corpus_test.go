package corpus

import (
	"bytes"
	"encoding/json"
	"flag"
	"math"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite docs/accuracy.md from this run")

const accuracyPage = "../docs/accuracy.md"

// TestScenarios holds every scenario.json to its fields (Load checks them)
// and its measured gain to the verify.json it was copied from.
func TestScenarios(t *testing.T) {
	scenarios, err := LoadAll(".")
	if err != nil {
		t.Fatal(err)
	}
	if len(scenarios) == 0 {
		t.Fatal("no scenarios")
	}
	for _, s := range scenarios {
		b, err := os.ReadFile(filepath.Join(s.Dir, "verify.json"))
		if os.IsNotExist(err) {
			if !s.Healthy {
				t.Errorf("%s: no verify.json for the measured gain", s.ID)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		var v struct {
			Ratios []struct {
				Figure string  `json:"figure"`
				Ratio  float64 `json:"ratio"`
				Low    float64 `json:"ci95_low"`
				High   float64 `json:"ci95_high"`
			} `json:"ratios"`
		}
		if err := json.Unmarshal(b, &v); err != nil {
			t.Errorf("%s: verify.json: %v", s.ID, err)
			continue
		}
		for _, r := range v.Ratios {
			var m *Ratio
			switch r.Figure {
			case "throughput":
				m = s.Measured.Throughput
			case "CPU/request":
				m = s.Measured.CPUPerUnit
			}
			if m != nil && !(close(m.Ratio, r.Ratio) && close(m.Lo, r.Low) && close(m.Hi, r.High)) {
				t.Errorf("%s: scenario.json says %s %.3f [%.3f, %.3f], verify.json %.3f [%.3f, %.3f]", s.ID, r.Figure, m.Ratio, m.Lo, m.Hi, r.Ratio, r.Low, r.High)
			}
		}
	}
}

// close is agreement to the rounding the record scripts apply: 1%, or
// three decimals.
func close(a, b float64) bool { return math.Abs(a-b) <= math.Max(0.01*math.Abs(b), 0.0005) }

// TestScorecard diagnoses every recorded bundle and compares the scorecard
// with docs/accuracy.md: a rule change that changes any verdict, top three
// or predicted gain fails here until the page is regenerated (-update), so
// the change is seen, and reviewed, as a diff of the page.
func TestScorecard(t *testing.T) {
	scenarios, err := LoadAll(".")
	if err != nil {
		t.Fatal(err)
	}
	gs := Score(t.Context(), scenarios)
	var b bytes.Buffer
	if err := WriteMarkdown(&b, gs); err != nil {
		t.Fatal(err)
	}
	for _, g := range gs {
		if g.Err != nil {
			t.Errorf("%s: %v", g.Scenario.ID, g.Err)
		}
	}
	if *update {
		if err := os.WriteFile(accuracyPage, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(accuracyPage)
	if err != nil {
		t.Fatalf("%v (go test ./corpus -update writes it)", err)
	}
	if !bytes.Equal(want, b.Bytes()) {
		t.Errorf("docs/accuracy.md is not what the recorded bundles give now; if the change is meant, run go test ./corpus -update and commit the page's diff.\n%s", lineDiff(string(want), b.String()))
	}
}

// lineDiff lists the lines of got not in want and the reverse, enough to
// see what changed.
func lineDiff(want, got string) string {
	in := func(s string) map[string]bool {
		m := map[string]bool{}
		for _, l := range bytes.Split([]byte(s), []byte("\n")) {
			m[string(l)] = true
		}
		return m
	}
	w, g := in(want), in(got)
	var b bytes.Buffer
	for _, l := range bytes.Split([]byte(want), []byte("\n")) {
		if !g[string(l)] {
			b.WriteString("- " + string(l) + "\n")
		}
	}
	for _, l := range bytes.Split([]byte(got), []byte("\n")) {
		if !w[string(l)] {
			b.WriteString("+ " + string(l) + "\n")
		}
	}
	return b.String()
}
