package report

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/google/pprof/profile"

	"github.com/perfdoctor/perfdoctor/evidence"
	"github.com/perfdoctor/perfdoctor/facts"
	"github.com/perfdoctor/perfdoctor/internal/testprof"
)

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

// beforeAfter: f grows from 40% to 70% flat, g is gone (was 50%), h is new
// (20%), main stays the caller of everything. B is twice as long as A:
// shares, not raw values, are compared.
func beforeAfter() (a, b *profile.Profile) {
	a = testprof.Build(
		testprof.Stack{Value: 40, Funcs: []string{"f", "main"}},
		testprof.Stack{Value: 50, Funcs: []string{"g", "main"}},
		testprof.Stack{Value: 10, Funcs: []string{"main"}},
	)
	b = testprof.Build(
		testprof.Stack{Value: 140, Funcs: []string{"f", "main"}},
		testprof.Stack{Value: 40, Funcs: []string{"h", "main"}},
		testprof.Stack{Value: 20, Funcs: []string{"main"}},
	)
	return a, b
}

func TestCompare(t *testing.T) {
	a, b := beforeAfter()
	d, err := facts.Compare(a, b, evidence.CPU)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Growers) == 0 || d.Growers[0].Function != "f" || !near(d.Growers[0].FlatDelta, 0.3) || !near(d.Growers[0].CumA, 0.4) {
		t.Fatalf("growers = %+v", d.Growers)
	}
	if len(d.Shrinkers) == 0 || d.Shrinkers[0].Function != "g" || !near(d.Shrinkers[0].FlatDelta, -0.5) {
		t.Errorf("shrinkers = %+v", d.Shrinkers)
	}
	if len(d.New) != 1 || d.New[0].Function != "h" || !near(d.New[0].CumB, 0.2) {
		t.Errorf("new = %+v", d.New)
	}
	if len(d.Vanished) != 1 || d.Vanished[0].Function != "g" {
		t.Errorf("vanished = %+v", d.Vanished)
	}
	for _, f := range d.Functions {
		if f.Function == "main" && (!near(f.CumA, 1) || !near(f.CumB, 1) || !near(f.FlatDelta, 0)) {
			t.Errorf("main = %+v", f)
		}
	}
	if !near(d.MaxGrowth, 0.3) || d.MaxGrowthFunc != "f" {
		t.Errorf("max growth %v in %s", d.MaxGrowth, d.MaxGrowthFunc)
	}
	if d.CheckRegression(0.35) || d.Regression != "" {
		t.Error("30 points is not more than 35")
	}
	if !d.CheckRegression(0.25) || !strings.Contains(d.Regression, "f grew by 30.0 percentage points") {
		t.Errorf("regression = %q", d.Regression)
	}
	if h := DiffHeadline(d); !strings.Contains(h, "The biggest grower is f: 40% → 70%") {
		t.Errorf("headline %q", h)
	}
	// The differential tree carries both sides.
	root := decode(t, diffTree(d))
	if root.total[0] != a.Sample[0].Value[1]*100/40 || root.total[1] != 200*10_000_000 {
		t.Errorf("root totals %v", root.total)
	}
}

func TestCompareEvidenceChoosesTheKind(t *testing.T) {
	a, b := beforeAfter()
	allocs := testprof.Build(testprof.Stack{Value: 1, Funcs: []string{"x"}})
	ev := func(ps map[evidence.Kind]*profile.Profile) *evidence.Evidence { return testprof.Evidence(ps) }
	for name, c := range map[string]struct {
		a, b    *evidence.Evidence
		kind    string
		want    string // kind chosen, or error text
		wantErr bool
	}{
		"cpu by default":  {ev(map[evidence.Kind]*profile.Profile{evidence.CPU: a, evidence.Allocs: allocs}), ev(map[evidence.Kind]*profile.Profile{evidence.CPU: b, evidence.Allocs: allocs}), "", "cpu", false},
		"the only shared": {ev(map[evidence.Kind]*profile.Profile{evidence.Block: a}), ev(map[evidence.Kind]*profile.Profile{evidence.Block: b, evidence.Mutex: b}), "", "block", false},
		"nothing shared":  {ev(map[evidence.Kind]*profile.Profile{evidence.Block: a}), ev(map[evidence.Kind]*profile.Profile{evidence.Mutex: b}), "", "no profile kind in common", true},
		"ambiguous":       {ev(map[evidence.Kind]*profile.Profile{evidence.Block: a, evidence.Mutex: a}), ev(map[evidence.Kind]*profile.Profile{evidence.Block: b, evidence.Mutex: b}), "", "--kind", true},
		"missing in A":    {ev(map[evidence.Kind]*profile.Profile{evidence.Block: a}), ev(map[evidence.Kind]*profile.Profile{evidence.CPU: b}), "cpu", "A has no cpu profile", true},
		"explicit kind":   {ev(map[evidence.Kind]*profile.Profile{evidence.CPU: a, evidence.Mutex: a}), ev(map[evidence.Kind]*profile.Profile{evidence.CPU: b, evidence.Mutex: b}), "mutex", "mutex", false},
	} {
		t.Run(name, func(t *testing.T) {
			d, err := facts.CompareEvidence(c.a, c.b, c.kind)
			if c.wantErr {
				if err == nil || !strings.Contains(err.Error(), c.want) {
					t.Errorf("err = %v, want %q", err, c.want)
				}
				return
			}
			if err != nil || d.Kind != c.want {
				t.Errorf("kind %v, err %v; want %s", d, err, c.want)
			}
		})
	}
}

func TestDiffFormats(t *testing.T) {
	a, b := beforeAfter()
	d, err := facts.Compare(a, b, evidence.CPU)
	if err != nil {
		t.Fatal(err)
	}
	d.A.Source, d.B.Source, d.Tool = "before/", "after/", "perfdoctor test"
	d.CheckRegression(0.1)
	for name, write := range DiffFormats {
		var buf bytes.Buffer
		if err := write(&buf, d); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		out := buf.String()
		switch name {
		case "json":
			var back facts.Diff
			if err := json.Unmarshal(buf.Bytes(), &back); err != nil || back.Growers[0].Function != "f" || back.Regression == "" {
				t.Errorf("json: %v %+v", err, back)
			}
		case "html":
			checkSelfContained(t, out)
			if pd := pageJSON(t, out); !pd.Diff || len(pd.Profiles) != 1 || pd.Profiles[0].Stride != 6 {
				t.Errorf("html data = %+v", pd)
			}
			for _, want := range []string{`data-section="growers"`, "Differential flame graph", "regression:"} {
				if !strings.Contains(out, want) {
					t.Errorf("html lacks %q", want)
				}
			}
		default:
			for _, want := range []string{"before/", "regression:", "New hot spots", "Vanished hot spots", "+30.0 pp"} {
				if !strings.Contains(out, want) {
					t.Errorf("%s lacks %q:\n%s", name, want, out)
				}
			}
		}
	}
}

func TestCompareRefusesEmptyProfiles(t *testing.T) {
	a, _ := beforeAfter()
	empty := testprof.Build()
	if _, err := facts.Compare(a, empty, evidence.CPU); err == nil || !strings.Contains(err.Error(), "no samples") {
		t.Errorf("err = %v", err)
	}
}
