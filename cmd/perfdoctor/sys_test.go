package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// TestSysLive observes this machine and this test process for a short
// window, as text, as JSON, and as a bundle that diagnose reads back.
func TestSysLive(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("needs /proc")
	}
	pid := strconv.Itoa(os.Getpid())
	code, out, errOut := perfdoctor(t, "sys", "-d", "300ms", "--pid", pid)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"perfdoctor sys: ", " s window, ", "CPU      us     sy     si", "TCP sockets:", "ip_local_port_range",
		"process " + pid + " (", "perfdoctor: "} {
		if !strings.Contains(out, want) {
			t.Errorf("text output lacks %q:\n%s", want, out)
		}
	}

	dir := filepath.Join(t.TempDir(), "b")
	code, out, errOut = perfdoctor(t, "sys", "-d", "300ms", "--pid", pid, "--format", "json", "-o", dir)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var doc struct {
		Summary struct {
			WindowSeconds float64 `json:"window_seconds"`
			CPUs          int
			CPU           []map[string]float64
			TCPStates     map[string]int `json:"tcp_states"`
			Process       *struct{ PID int }
		}
		Report struct{ Inputs struct{ System bool } }
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("JSON: %v\n%s", err, out)
	}
	s := doc.Summary
	if s.WindowSeconds < 0.3 || s.CPUs < 1 || len(s.CPU) != s.CPUs+1 || s.Process == nil || s.Process.PID != os.Getpid() || !doc.Report.Inputs.System {
		t.Errorf("summary %+v", doc)
	}
	code, out, errOut = perfdoctor(t, "diagnose", dir)
	if code != 0 || !strings.Contains(out, "/proc snapshot") {
		t.Errorf("diagnose of the sys bundle: exit %d\n%s%s", code, out, errOut)
	}
}

func TestSysBadFlags(t *testing.T) {
	for args, want := range map[string]string{
		"sys --format xml":             `unknown --format "xml"`,
		"sys -d 1ms":                   "--duration 1ms out of range",
		"sys --pid 999999999 -d 100ms": "process 999999999 does not exist",
		"sys extra":                    "accepts 0 arg(s)",
	} {
		code, _, errOut := perfdoctor(t, strings.Fields(args)...)
		wantOneLineError(t, code, errOut, want)
	}
}
