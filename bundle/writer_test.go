package bundle

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestWriterAssemblesAsideAndRenamesLast(t *testing.T) {
	final := filepath.Join(t.TempDir(), "out", "b1")
	w, err := Create(final)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(final); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the destination exists before Finish: %v", err)
	}
	if !strings.HasPrefix(filepath.Base(w.Dir()), "b1.partial-") || filepath.Dir(w.Dir()) != filepath.Dir(final) {
		t.Errorf("temporary directory %s is not a sibling of %s", w.Dir(), final)
	}
	w.AddJSON("metrics-start", MetricsStartFile, map[string]int{"x": 1}, 0)
	w.Fail("cpu", errors.New("connection refused"))
	w.Skip("trace", "disabled")
	m := &Manifest{Tool: "test"}
	w.Complete(m)
	if err := w.Finish(m, final); err != nil {
		t.Fatal(err)
	}
	got, err := ReadManifest(final)
	if err != nil {
		t.Fatal(err)
	}
	if !got.Partial || got.FormatVersion != FormatVersion || len(got.Items) != 3 {
		t.Fatalf("manifest = %+v", got)
	}
	if it := got.Items[0]; it.Status != StatusOK || it.File != MetricsStartFile || it.Bytes == 0 {
		t.Errorf("written item = %+v", it)
	}
	if it := got.Items[1]; it.Status != StatusFailed || it.Error != "connection refused" || it.File != "" {
		t.Errorf("failed item = %+v", it)
	}
	if it := got.Items[2]; it.Status != StatusSkipped || it.Error != "disabled" {
		t.Errorf("skipped item = %+v", it)
	}
	if _, err := os.Stat(w.Dir()); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("temporary directory still there: %v", err)
	}
}

func TestWriterNeverClobbersABundle(t *testing.T) {
	final := t.TempDir()
	if err := os.WriteFile(filepath.Join(final, "keep"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Create(final); err == nil || !strings.Contains(err.Error(), "not empty") {
		t.Fatalf("Create over a non-empty directory: %v", err)
	}
	// Filled between Create and Finish: the bundle is left aside, named.
	empty := filepath.Join(t.TempDir(), "b")
	w, err := Create(empty)
	if err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(empty, 0o755)
	os.WriteFile(filepath.Join(empty, "other"), []byte("x"), 0o644)
	m := &Manifest{}
	w.Complete(m)
	if err := w.Finish(m, empty); err == nil || !strings.Contains(err.Error(), w.Dir()) {
		t.Fatalf("Finish onto a filled directory: %v", err)
	}
	if _, err := os.Stat(filepath.Join(w.Dir(), ManifestFile)); err != nil {
		t.Errorf("the bundle left aside has no manifest: %v", err)
	}
}
