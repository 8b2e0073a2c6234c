package bundle

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestAddLoad(t *testing.T) {
	dir := t.TempDir()
	if err := AddLoad(dir, map[string]int{"requests": 1}, LoadSummary{}); err == nil {
		t.Fatal("AddLoad on a directory without a manifest succeeded")
	}
	if err := WriteJSONAtomic(filepath.Join(dir, ManifestFile), &Manifest{FormatVersion: 1, Items: []Item{{Name: "cpu", Status: StatusOK}}}); err != nil {
		t.Fatal(err)
	}
	for range 2 { // a second call replaces, not duplicates
		if err := AddLoad(dir, map[string]int{"requests": 7}, LoadSummary{URL: "http://x/", Concurrency: 4, Duration: Duration(time.Second)}); err != nil {
			t.Fatal(err)
		}
	}
	m, err := ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Items) != 2 || !m.OK("load") || m.Load == nil || m.Load.Concurrency != 4 {
		t.Fatalf("manifest %+v", m)
	}
	if b, err := os.ReadFile(filepath.Join(dir, LoadFile)); err != nil || string(b) != "{\n  \"requests\": 7\n}\n" {
		t.Fatalf("load.json = %q, %v", b, err)
	}
}
