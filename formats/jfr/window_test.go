package jfr

import (
	"strings"
	"testing"
	"time"
)

// A window keeps what happened inside it: fewer samples, the window as
// the span, and the JVM's description written when the chunk began.
func TestReadFileWindow(t *testing.T) {
	const path = "testdata/jdk17.jfr"
	whole, err := ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	span := whole.JVM.End.Sub(whole.JVM.Start)
	w := Window{Since: whole.JVM.Start.Add(span / 4), Until: whole.JVM.Start.Add(3 * span / 4)}
	part, err := ReadFileWindow(path, w)
	if err != nil {
		t.Fatal(err)
	}
	if !part.JVM.Start.Equal(w.Since) || !part.JVM.End.Equal(w.Until) {
		t.Errorf("span %s to %s, want the window %s to %s", part.JVM.Start, part.JVM.End, w.Since, w.Until)
	}
	if d := time.Duration(part.CPU.DurationNanos); d != w.Until.Sub(w.Since) {
		t.Errorf("CPU profile covers %s, want %s", d, w.Until.Sub(w.Since))
	}
	if n := part.JVM.ExecutionSamples; n == 0 || n >= whole.JVM.ExecutionSamples {
		t.Errorf("%d execution samples in half the recording, %d in all of it", n, whole.JVM.ExecutionSamples)
	}
	if part.JVM.JVMVersion == "" || part.JVM.JVMVersion != whole.JVM.JVMVersion || len(part.JVM.Flags) != len(whole.JVM.Flags) {
		t.Errorf("the JVM's description was dropped: %q, %d flags", part.JVM.JVMVersion, len(part.JVM.Flags))
	}
	if _, err := ReadFileWindow(path, Window{Since: w.Until, Until: w.Since}); err == nil || !strings.Contains(err.Error(), "empty") {
		t.Errorf("reversed window: %v", err)
	}
}
