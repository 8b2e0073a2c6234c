package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestExportCommand(t *testing.T) {
	out := filepath.Join(t.TempDir(), "cpu.folded")
	code, _, stderr := perfdoctor(t, "export", "../../evidence/jfr/testdata/jdk25.jfr", "-o", out)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	data, err := os.ReadFile(out)
	if err != nil || !strings.Contains(string(data), "Workload.main;Workload.spin ") {
		t.Errorf("folded export: %v\n%.300s", err, data)
	}
	code, stdout, _ := perfdoctor(t, "export", "../../evidence/perfscript/testdata/multi-event.txt", "--kind", "perf", "-f", "speedscope")
	if code != 0 || !strings.Contains(stdout, `"type":"sampled"`) {
		t.Errorf("speedscope export: exit %d, %.200s", code, stdout)
	}
	code, _, stderr = perfdoctor(t, "export", "../../evidence/jfr/testdata/jdk25.jfr", "--kind", "heap")
	wantOneLineError(t, code, stderr, "no heap profile in the input (it has: ")
	code, _, stderr = perfdoctor(t, "export", "../../evidence/jfr/testdata/ap-wall.jfr", "-f", "svg")
	wantOneLineError(t, code, stderr, "unknown --format")
}
