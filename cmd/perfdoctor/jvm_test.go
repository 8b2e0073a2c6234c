package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/perfdoctor/perfdoctor/formats/jfr"
)

func TestDiagnoseFoldedStacks(t *testing.T) {
	code, stdout, stderr := perfdoctor(t, "diagnose", "../../formats/folded/testdata/async.collapsed")
	if code != 0 && code != 1 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(stdout, "exception-overhead (JVM001)") || !strings.Contains(stdout, "com.example.Server.handle") {
		t.Errorf("output:\n%s", stdout)
	}
}

func TestDiagnoseJFR(t *testing.T) {
	if _, err := jfr.Tool(); err != nil {
		t.Skipf("skipped: %v", err)
	}
	code, stdout, stderr := perfdoctor(t, "diagnose", "../../formats/jfr/testdata/jdk25.jfr")
	if code != 0 && code != 1 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(stdout, "JFR recording of JVM 25.") || !strings.Contains(stdout, "jvm-explicit-gc (JVM004)") {
		t.Errorf("output:\n%s", stdout)
	}
}

func TestCollectJFRBadInput(t *testing.T) {
	code, _, stderr := perfdoctor(t, "collect", "--jfr", "1", "http://127.0.0.1:1")
	wantOneLineError(t, code, stderr, "--jfr takes a process ID, not a URL")
	code, _, stderr = perfdoctor(t, "collect", "--jfr", "999999999", "-d", "1s", "-o", filepath.Join(t.TempDir(), "b"))
	wantOneLineError(t, code, stderr, "no such process")
}

func TestDiagnoseCorruptJFR(t *testing.T) {
	if _, err := jfr.Tool(); err != nil {
		t.Skipf("skipped: %v", err)
	}
	bad := filepath.Join(t.TempDir(), "bad.jfr")
	if err := os.WriteFile(bad, []byte("FLR\x00garbage"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := perfdoctor(t, "diagnose", bad)
	wantOneLineError(t, code, stderr, "bad.jfr")
}

func TestCollectJVMBadInput(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--jvm", "1", "http://127.0.0.1:1"}, "--jvm takes a process ID, not a URL"},
		{[]string{"--jvm", "1", "--jfr", "1"}, "--jfr and --jvm both record a JVM: give one"},
		{[]string{"--jfr", "1", "--async-profiler", "lib.so"}, "--async-profiler and --jvm-event go with --jvm"},
		{[]string{"--jfr", "1", "--jvm-event", "itimer"}, "--async-profiler and --jvm-event go with --jvm"},
		{[]string{"--jvm", "1", "--jvm-event", "wall", "-d", "1s", "-o", filepath.Join(t.TempDir(), "c")}, "want cpu or itimer"},
		{[]string{"--jvm", "999999999", "-d", "1s", "-o", filepath.Join(t.TempDir(), "b")}, "no such process"},
		{[]string{"--jfr", "1", "--jit-settle", "-1s", "-d", "1s", "-o", filepath.Join(t.TempDir(), "d")}, "--jit-settle -1s out of range 0..10m"},
	} {
		code, _, stderr := perfdoctor(t, append([]string{"collect"}, tc.args...)...)
		wantOneLineError(t, code, stderr, tc.want)
	}
}

// fetch-async-profiler from a repository that does not answer: one line
// saying so, nothing written.
func TestFetchAsyncProfilerUnreachable(t *testing.T) {
	dir := t.TempDir()
	code, _, stderr := perfdoctor(t, "fetch-async-profiler", "--from", "http://127.0.0.1:1/maven2", "--dir", dir)
	wantOneLineError(t, code, stderr, "downloading async-profiler")
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("wrote %v", ents)
	}
}
