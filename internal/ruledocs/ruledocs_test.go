package ruledocs

import (
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/perfdoctor/perfdoctor/facts"
	"github.com/perfdoctor/perfdoctor/rules/catalog"
)

var update = flag.Bool("update", false, "rewrite docs/rules and docs/facts.md from the code's docs")

var factsPage = filepath.Join("..", "..", "docs", "facts.md")

// TestDocsUpToDate fails when a rule's doc changed without regenerating its page.
func TestDocsUpToDate(t *testing.T) {
	dir := filepath.Join("..", "..", "docs", "rules")
	want := map[string]string{"README.md": Index(catalog.All())}
	for _, r := range catalog.All() {
		want[r.ID+".md"] = Page(r)
	}
	if *update {
		os.RemoveAll(dir)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for name, text := range want {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(factsPage, []byte(Facts(facts.All(), catalog.All())), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if got, err := os.ReadFile(factsPage); err != nil || string(got) != Facts(facts.All(), catalog.All()) {
		t.Errorf("docs/facts.md is stale; run go test ./internal/ruledocs -update")
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != len(want) {
		t.Errorf("docs/rules has %d files, want %d; run go test ./internal/ruledocs -update", len(entries), len(want))
	}
	for name, text := range want {
		got, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil || string(got) != text {
			t.Errorf("docs/rules/%s is stale; run go test ./internal/ruledocs -update", name)
		}
	}
}
