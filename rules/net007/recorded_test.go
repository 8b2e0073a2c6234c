package net007

import (
	"testing"

	"github.com/perfdoctor/perfdoctor/rules"
	"github.com/perfdoctor/perfdoctor/rules/ruletest"
)

// The recorded cases (testdata/record.sh): the ingest service in
// testdata/ingest and VictoriaMetrics taking one item per POST and 1000 per
// POST; redis answering one GET per round trip and 16 commands per round
// trip, through perf. Their want.txt say what each must show.
func TestRecorded(t *testing.T) {
	res := ruletest.Run(t, "testdata", []*rules.Rule{Rule})
	fs := res["one-per-post"].Findings
	if len(fs) != 1 {
		t.Fatalf("one-per-post: want one finding, got %d", len(fs))
	}
	r := fs[0].ImpactRange
	if r == nil || r[0] > fs[0].Impact || fs[0].Impact > r[1] {
		t.Errorf("impact %.2f outside its range %v", fs[0].Impact, r)
	}
}
