package catalog

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/perfdoctor/perfdoctor/rules"
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
		if len(r.Needs) == 0 || r.Check == nil {
			t.Errorf("%s: no inputs or no check", r.ID)
		}
	}
	// Every rule package under rules/ must be in the catalog.
	dirs, err := os.ReadDir("..")
	if err != nil {
		t.Fatal(err)
	}
	packages := 0
	for _, d := range dirs {
		if d.IsDir() && d.Name() != "catalog" {
			src, err := os.ReadFile(filepath.Join("..", d.Name(), d.Name()+".go"))
			if err == nil && strings.Contains(string(src), "var Rule = &rules.Rule{") {
				packages++
			}
		}
	}
	if packages != len(All()) {
		t.Errorf("%d rule packages under rules/, %d in the catalog", packages, len(All()))
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
