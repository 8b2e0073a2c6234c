package evidence

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/perfdoctor/perfdoctor/bundle"
)

// A bundle's config.json is recognised by its content and read into
// ConfigFiles; a bundle without one has none.
func TestLoadConfigFiles(t *testing.T) {
	dir := t.TempDir()
	want := &bundle.ConfigFiles{Program: "pgbouncer", PID: 7, Files: []bundle.ConfigFile{
		{Path: "/etc/pgbouncer/pgbouncer.ini", Named: "argument", Format: "ini", Size: 30, Content: "[pgbouncer]\ndefault_pool_size = 1\n"},
		{Path: "/etc/pgbouncer/other.ini", Named: "argument", Format: "ini", Error: "open: permission denied"},
	}}
	if err := bundle.WriteJSONAtomic(filepath.Join(dir, bundle.ConfigFilesFile), want); err != nil {
		t.Fatal(err)
	}
	snap := &bundle.SystemSnapshot{Process: &bundle.ProcessInfo{PID: 7, Comm: "pgbouncer"}}
	if err := bundle.WriteJSONAtomic(filepath.Join(dir, bundle.SystemEndFile), snap); err != nil {
		t.Fatal(err)
	}
	ev, err := Load(context.Background(), LoadOptions{}, dir)
	if err != nil {
		t.Fatal(err)
	}
	c := ev.ConfigFiles
	if c == nil || c.Program != "pgbouncer" || len(c.Files) != 2 || c.Files[0].Content != want.Files[0].Content || c.Files[1].Error == "" {
		t.Fatalf("config files %+v", c)
	}
	if err := os.Remove(filepath.Join(dir, bundle.ConfigFilesFile)); err != nil {
		t.Fatal(err)
	}
	if ev, err := Load(context.Background(), LoadOptions{}, dir); err != nil || ev.ConfigFiles != nil {
		t.Errorf("a bundle without config.json: %v %+v", err, ev.ConfigFiles)
	}
}
