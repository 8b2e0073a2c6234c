package bundle

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestAddLoad(t *testing.T) {
	dir := t.TempDir()
	if err := AddLoad(dir, &LoadResult{Requests: 1}, LoadSummary{}); err == nil {
		t.Fatal("AddLoad on a directory without a manifest succeeded")
	}
	if err := WriteJSONAtomic(filepath.Join(dir, ManifestFile), &Manifest{FormatVersion: 1, Items: []Item{{Name: "cpu", Status: StatusOK}}}); err != nil {
		t.Fatal(err)
	}
	for range 2 { // a second call replaces, not duplicates
		if err := AddLoad(dir, &LoadResult{Requests: 7}, LoadSummary{URL: "http://x/", Concurrency: 4, Duration: Duration(time.Second)}); err != nil {
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
	var got LoadResult
	if b, err := os.ReadFile(filepath.Join(dir, LoadFile)); err != nil || json.Unmarshal(b, &got) != nil || got.Requests != 7 {
		t.Fatalf("load.json = %q, %v", b, err)
	}
}
