// Package jvmthreadstest loads the JVM thread rules' recorded fixtures
// (rules/testdata/jfr, made by record.sh there) for their tests.
package jvmthreadstest

import (
	"context"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/perfdoctor/perfdoctor/facts"

	"github.com/perfdoctor/perfdoctor/evidence"
	"github.com/perfdoctor/perfdoctor/rules"
)

// Load reads the fixture recorded for mode (ThreadWork.java's modes).
func Load(t testing.TB, mode string) *evidence.Evidence {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	ev, err := evidence.Load(context.Background(), evidence.LoadOptions{}, filepath.Join(filepath.Dir(file), "..", "..", "testdata", "jfr", mode+".jfr.gz"))
	if err != nil {
		t.Fatal(err)
	}
	return ev
}

// Run checks the rules against the fixture recorded for mode.
func Run(t testing.TB, mode string, rs ...*rules.Rule) rules.Result {
	t.Helper()
	return rules.Run(facts.New(Load(t, mode)), rs)
}
