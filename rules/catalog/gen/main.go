// Command gen writes rules/catalog/catalog.go and rules/classes_gen.go from
// the rule packages under rules/. Run it with `go generate ./rules/...`.
package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/perfdoctor/perfdoctor/rules/catalog/internal/catalogen"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}

// run expects to be started in rules/catalog, as go generate does.
func run() error {
	rs, err := catalogen.Scan("..")
	if err != nil {
		return err
	}
	catalog, err := catalogen.Catalog(rs)
	if err != nil {
		return err
	}
	classes, err := catalogen.Classes(rs)
	if err != nil {
		return err
	}
	if err := os.WriteFile("catalog.go", catalog, 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join("..", "classes_gen.go"), classes, 0o644)
}
