package report

import (
	"html"
	"strings"
	"testing"

	"github.com/perfdoctor/perfdoctor/rules"
)

func TestGainMeaning(t *testing.T) {
	for _, c := range []struct {
		f    rules.Finding
		want string
	}{
		{rules.Finding{Impact: 0.4, Resource: "cpu"}, "CPU per request ×0.60 or less at the same load, up to 1.67x the throughput"},
		{rules.Finding{Impact: 0.5, Resource: "latency"}, "request time ×0.50, up to 2.00x the throughput of the same clients"},
		{rules.Finding{Impact: 0.8, Resource: "memory"}, ""},
		{rules.Finding{Impact: 0.3, Resource: "latency", Growing: true}, ""}, // a limit, not a speed
		{rules.Finding{Impact: 1, Resource: "cpu"}, ""},
		{rules.Finding{Impact: 0.001, Resource: "cpu"}, ""},
		// A fix that removes the work states its floor and no top.
		{rules.Finding{Impact: 0.9, ImpactRange: &[2]float64{0.8, 0.95}, RemovesWork: true, Resource: "cpu"},
			"CPU per request ×0.10 or less at the same load, about 10.00x the throughput where CPU is the limit, at least 5.00x, with no top"},
		{rules.Finding{Impact: 0.5, RemovesWork: true, Resource: "cpu"}, "CPU per request ×0.50 or less at the same load, about 2.00x the throughput where CPU is the limit, at least 2.00x, with no top"},
	} {
		if got := gainMeaning(c.f); !strings.HasPrefix(got, c.want) || (c.want == "" && got != "") {
			t.Errorf("%+v: %q, want %q...", c.f, got, c.want)
		}
	}
}

// A cause's explains line totals what its fix removes with its CPU
// symptoms; a latency symptom is not added to a CPU share.
func TestExplainsLineTotalsCPUSymptoms(t *testing.T) {
	fs := []rules.Finding{
		{ID: "LIB003", Class: "reflection-serialization", Impact: 0.393, Resource: "cpu", Explains: []string{"GC001", "SCHED003"}},
		{ID: "GC001", Class: "gc-pressure", Impact: 0.079, Resource: "cpu", CausedBy: "LIB003"},
		{ID: "SCHED003", Class: "scheduling-latency", Impact: 0.196, Resource: "latency", CausedBy: "LIB003"},
	}
	_, explains := newRefs(fs).lines(fs, 0)
	if !strings.HasSuffix(explains, "; with them the fix's est. gain is 47% of cpu") {
		t.Errorf("explains line %q", explains)
	}
	fs[1].Resource = "memory"
	if _, explains := newRefs(fs).lines(fs, 0); strings.Contains(explains, "with them") {
		t.Errorf("no CPU symptom, yet %q", explains)
	}
}

// The HTML card's gain estimate says the same as the text report's.
func TestHTMLGainEstimateSaysWhatItMeans(t *testing.T) {
	r := sampleReport(t)
	f := r.Findings[0]
	if want := gainMeaning(f); want == "" || !strings.Contains(htmlOf(t, r), html.EscapeString(want)+". "+html.EscapeString(f.ImpactBasis)) {
		t.Errorf("the HTML card does not say %q before %q", want, f.ImpactBasis)
	}
}
