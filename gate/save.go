package gate

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/perfdoctor/perfdoctor/internal/output"
	"github.com/perfdoctor/perfdoctor/report"
)

// Save writes gate.md, gate.json and, when the profiles were diffed,
// diff.html into dir, each whole or not at all.
func (r *Result) Save(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("output: %w", err)
	}
	if r.Diff != nil {
		r.Files = append(r.Files, "diff.html")
		for _, side := range []string{"base", "head"} {
			r.Files = append(r.Files, side+"/report.html")
		}
	}
	files := map[string]func(io.Writer) error{
		"gate.md": r.WriteMarkdown,
		"gate.json": func(w io.Writer) error {
			enc := json.NewEncoder(w)
			enc.SetIndent("", "  ")
			return enc.Encode(r)
		},
	}
	if r.Diff != nil {
		files["diff.html"] = func(w io.Writer) error { return report.WriteDiffHTML(w, r.Diff) }
	}
	for name, write := range files {
		var buf bytes.Buffer
		if err := write(&buf); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		// Through a temporary file: a gate.json half written never reads
		// as a verdict.
		if err := output.WriteFile(filepath.Join(dir, name), 0o644, buf.Bytes()); err != nil {
			return err
		}
	}
	return nil
}
