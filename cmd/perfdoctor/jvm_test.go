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
