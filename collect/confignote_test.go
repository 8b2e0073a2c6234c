package collect

import (
	"testing"

	"github.com/perfdoctor/perfdoctor/bundle"
)

// The manifest's note says what of a server's files was read, cut and
// redacted, and what could not be named.
func TestConfigNote(t *testing.T) {
	c := &bundle.ConfigFiles{Program: "postgres", Note: "x", Files: []bundle.ConfigFile{
		{Path: "/d/postgresql.conf", Size: 300 << 10, Truncated: true, Redacted: 2},
		{Path: "/d/postgresql.auto.conf", Error: "open /d/postgresql.auto.conf: permission denied"},
	}}
	want := "postgres: 1 of 2 files read; /d/postgresql.conf cut at 256 KiB of 307200; /d/postgresql.auto.conf not read: open /d/postgresql.auto.conf: permission denied; 2 lines redacted; x"
	if got := configNote(c); got != want {
		t.Errorf("note %q\nwant %q", got, want)
	}
}
