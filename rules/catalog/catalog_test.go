package catalog

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/perfdoctor/perfdoctor/rules"
	"github.com/perfdoctor/perfdoctor/rules/catalog/internal/catalogen"
)

var idPattern = regexp.MustCompile(`^[A-Z]+[0-9]{3}$`)

func TestCatalogIsComplete(t *testing.T) {
	ids := map[string]bool{}
	for _, r := range All() {
		if !idPattern.MatchString(r.ID) || ids[r.ID] {
			t.Errorf("rule ID %q malformed or duplicated", r.ID)
		}
		ids[r.ID] = true
		if !rules.KnownClass(r.Class) {
			t.Errorf("%s: class %q is not in findings.md", r.ID, r.Class)
		}
		d := r.Doc
		if d.Title == "" || d.Text == "" || d.Evidence == "" || d.Fix == "" || d.Since == "" {
			t.Errorf("%s: doc incomplete (title, text, evidence, fix and since are required)", r.ID)
		}
		if len(r.Needs)+len(r.NeedsOneOf) == 0 || r.Check == nil {
			t.Errorf("%s: no inputs or no check", r.ID)
		}
	}
	// Every rule package under rules/ must be in the catalog.
	rs, err := catalogen.Scan("..")
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != len(All()) {
		t.Errorf("%d rule packages under rules/, %d in the catalog", len(rs), len(All()))
	}
}

func TestLookup(t *testing.T) {
	if r := Lookup("gc001"); r == nil || r.Class != "gc-pressure" {
		t.Error("lookup by ID is not case-insensitive")
	}
	if r := Lookup("connection-churn"); r == nil {
		t.Error("lookup by class failed")
	}
	if Lookup("NOPE999") != nil {
		t.Error("unknown ID found")
	}
}

// TestGeneratedFilesAreCurrent fails when a rule package was added, removed
// or renamed without `go generate ./rules/catalog`.
func TestGeneratedFilesAreCurrent(t *testing.T) {
	rs, err := catalogen.Scan("..")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rs {
		if r.Dir != strings.ToLower(r.ID) || r.Package != r.Dir {
			t.Errorf("rule %s lives in rules/%s (package %s): a rule's package is named after its ID, rules/%s",
				r.ID, r.Dir, r.Package, strings.ToLower(r.ID))
		}
	}
	for file, gen := range map[string]func([]catalogen.RuleInfo) ([]byte, error){
		"catalog.go":        catalogen.Catalog,
		"../classes_gen.go": catalogen.Classes,
	} {
		want, err := gen(rs)
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want) {
			t.Errorf("%s is stale: run go generate ./rules/catalog", file)
		}
	}
}
