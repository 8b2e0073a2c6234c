package testprof

import (
	"context"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/perfdoctor/perfdoctor/evidence"
)

// JVMRecording loads one of the JVM rules' JFR recordings
// (rules/testdata/jvm, made by its record.sh from the Java programs there).
func JVMRecording(t testing.TB, name string) *evidence.Evidence {
	t.Helper()
	_, here, _, _ := runtime.Caller(0)
	ev, err := evidence.Load(context.Background(), evidence.LoadOptions{}, filepath.Join(filepath.Dir(here), "..", "..", "rules", "testdata", "jvm", name))
	if err != nil {
		t.Fatal(err)
	}
	return ev
}
