package casebook

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/perfdoctor/perfdoctor/diagnose"
	"github.com/perfdoctor/perfdoctor/rules/ruletest"
)

// recordedDir holds every case variant's bundle as casebook/record.sh
// recorded it, one folder per Go release the services were built with, each
// bundle with its want.txt (serve.Case.Want), and the JVM cases' as
// casebook/record-jvm.sh recorded them, one folder per JDK release (jdkN).
const recordedDir = "testdata/recorded"

// TestRecorded diagnoses every recorded casebook bundle with the whole
// catalog and holds it to its case's expectations, offline: the same
// expectations the live e2e holds a fresh collection to, without starting
// a service. PERFDOCTOR_CASEBOOK_RECORDED=DIR reads another recording.
func TestRecorded(t *testing.T) {
	dir := recordedDir
	if v := os.Getenv("PERFDOCTOR_CASEBOOK_RECORDED"); v != "" {
		dir = v
	}
	goDirs, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, g := range goDirs {
		if !g.IsDir() {
			continue
		}
		t.Run(g.Name(), func(t *testing.T) {
			ruletest.Run(t, filepath.Join(dir, g.Name()), diagnose.All())
		})
		n++
	}
	if n == 0 {
		t.Fatalf("no recordings under %s (casebook/record.sh makes them)", dir)
	}
}
