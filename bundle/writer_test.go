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

// TestWriterFollowsLinks: a link at the destination, to an empty directory
// or to nothing yet, receives the bundle where it points and stays a link.
func TestWriterFollowsLinks(t *testing.T) {
	dir := t.TempDir()
	os.Mkdir(filepath.Join(dir, "empty"), 0o755)
	os.Symlink("empty", filepath.Join(dir, "to-empty"))
	os.Symlink("later", filepath.Join(dir, "to-later"))
	for link, target := range map[string]string{"to-empty": "empty", "to-later": "later"} {
		final := filepath.Join(dir, link)
		w, err := Create(final)
		if err != nil {
			t.Fatal(err)
		}
		m := &Manifest{Tool: "test"}
		w.Complete(m)
		if err := w.Finish(m, final); err != nil {
			t.Fatal(err)
		}
		if got, err := os.Readlink(final); err != nil || got != target {
			t.Errorf("%s now reads %q (%v), want it left a link to %s", link, got, err, target)
		}
		if _, err := ReadManifest(filepath.Join(dir, target)); err != nil {
			t.Errorf("no bundle where %s points: %v", link, err)
		}
	}
}

// TestWriterLeavesWhatIsNoDirectory: a file (or device) at the destination
// is refused at Create and, if it appears by Finish, kept.
func TestWriterLeavesWhatIsNoDirectory(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	os.WriteFile(file, []byte("kept"), 0o644)
	if _, err := Create(file); err == nil || err.Error() != "output directory "+file+" exists and is not a directory" {
		t.Errorf("Create over a file: %v", err)
	}
	if _, err := Create("-"); err == nil || !strings.Contains(err.Error(), "cannot go to standard output") {
		t.Errorf(`Create("-"): %v`, err)
	}
	final := filepath.Join(dir, "b")
	w, err := Create(final)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(final, []byte("kept"), 0o644)
	m := &Manifest{}
	w.Complete(m)
	if err := w.Finish(m, final); err == nil || !strings.Contains(err.Error(), "exists and is not a directory") {
		t.Errorf("Finish onto a file: %v", err)
	}
	for _, p := range []string{file, final} {
		if b, err := os.ReadFile(p); err != nil || string(b) != "kept" {
			t.Errorf("%s holds %q (%v)", p, b, err)
		}
	}
}

// Annotate adds to an item's note what its data lacks (an off-CPU
// recording whose switch-ins the kernel did not all report); an empty note
// adds nothing, a second joins the first.
func TestWriterAnnotate(t *testing.T) {
	w, err := Create(filepath.Join(t.TempDir(), "b"))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Abort()
	w.AddJSON("offcpu", "offcpu.json", map[string]int{"x": 1}, 0)
	w.AddJSON("cpu", "cpu.json", map[string]int{"x": 1}, 0)
	w.Annotate("offcpu", "")
	w.Annotate("offcpu", "730 of 736 switch-outs had no switch-in")
	w.Annotate("offcpu", "second")
	for _, it := range w.Items() {
		want := map[string]string{"offcpu": "730 of 736 switch-outs had no switch-in; second", "cpu": ""}[it.Name]
		if it.Note != want {
			t.Errorf("%s: note %q, want %q", it.Name, it.Note, want)
		}
	}
}
