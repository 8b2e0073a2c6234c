package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/google/pprof/profile"

	"github.com/perfdoctor/perfdoctor/evidence"
	"github.com/perfdoctor/perfdoctor/internal/testprof"
)

// Inputs read in part or with an assumption, and too few CPU samples, are
// said in every format, and the JSON still matches the schema.
func TestCaveatsAndWarnings(t *testing.T) {
	cpu := testprof.Build(testprof.Stack{Value: 7, Funcs: []string{"main.work", "main.main"}})
	ev := testprof.Evidence(map[evidence.Kind]*profile.Profile{evidence.CPU: cpu})
	ev.Files = []evidence.File{
		{Path: "trace.out", Kind: "trace", Partial: "execution trace cut short after 812 events"},
		{Path: "total.folded", Kind: "folded", Note: "counts read as nanoseconds"},
		{Path: "notes.md", Reason: "not a format perfdoctor reads"},
	}
	r := diagnosed("perfdoctor test", ev)
	if len(r.Inputs.Caveats) != 2 || len(r.Inputs.Warnings) != 1 || !strings.Contains(r.Inputs.Warnings[0], "only 7 samples") {
		t.Fatalf("caveats %+v warnings %q", r.Inputs.Caveats, r.Inputs.Warnings)
	}
	var text, md bytes.Buffer
	WriteText(&text, r)
	WriteMarkdown(&md, r)
	for name, out := range map[string]string{"text": text.String(), "markdown": md.String()} {
		for _, want := range []string{"partial input: trace.out: execution trace cut short", "note: total.folded: counts read as nanoseconds", "only 7 samples"} {
			if !strings.Contains(out, want) {
				t.Errorf("%s report lacks %q:\n%s", name, want, out)
			}
		}
	}
	matchesSchema(t, "with caveats", r)
}
