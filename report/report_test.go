package report

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/pprof/profile"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/perfdoctor/perfdoctor/evidence"
	"github.com/perfdoctor/perfdoctor/internal/testprof"
	"github.com/perfdoctor/perfdoctor/rules"
	"github.com/perfdoctor/perfdoctor/rules/catalog"
)

func sampleReport(t *testing.T) *Report {
	t.Helper()
	cpu := testprof.Build(
		testprof.Stack{Value: 300, Funcs: []string{"runtime.scanObject", "runtime.gcBgMarkWorker"}},
		testprof.Stack{Value: 250, Funcs: []string{"net.(*netFD).connect", "net.DialUDP", "main.send"}},
		testprof.Stack{Value: 450, Funcs: []string{"main.work"}},
	)
	ev := testprof.Evidence(map[evidence.Kind]*profile.Profile{evidence.CPU: cpu})
	return New("perfdoctor test", ev, rules.Run(ev, catalog.All()))
}

func TestJSONMatchesSchema(t *testing.T) {
	compiler := jsonschema.NewCompiler()
	schema, err := compiler.Compile("../docs/report.schema.json")
	if err != nil {
		t.Fatalf("schema: %v", err)
	}
	var buf bytes.Buffer
	if err := WriteJSON(&buf, sampleReport(t)); err != nil {
		t.Fatal(err)
	}
	doc, err := jsonschema.UnmarshalJSON(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if err := schema.Validate(doc); err != nil {
		t.Errorf("report does not match docs/report.schema.json: %v", err)
	}
}

func TestJSONIsRanked(t *testing.T) {
	var buf bytes.Buffer
	WriteJSON(&buf, sampleReport(t))
	var doc struct {
		Findings []struct {
			Class  string
			Impact float64
		}
	}
	if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Findings) < 2 || doc.Findings[0].Class != "gc-pressure" || doc.Findings[1].Class != "connection-churn" {
		t.Fatalf("findings = %+v", doc.Findings)
	}
}

func TestTextPutsTheVerdictFirst(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteText(&buf, sampleReport(t)); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	first := strings.Index(out, "gc-pressure")
	second := strings.Index(out, "connection-churn")
	if first < 0 || second < first || !strings.Contains(out, "[HIGH]") || !strings.Contains(out, "Fix:") {
		t.Errorf("text report:\n%s", out)
	}
}

func TestUnknownFormat(t *testing.T) {
	if err := Write(&bytes.Buffer{}, "yaml", sampleReport(t)); err == nil || !strings.Contains(err.Error(), "json, markdown, sarif, text") {
		t.Errorf("err = %v", err)
	}
}
