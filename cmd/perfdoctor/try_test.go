package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/perfdoctor/perfdoctor/rules"
)

// tryCasebook runs perfdoctor try on a casebook case's bad variant,
// started by try itself (prefix goes before the command: a CPU limit), and
// returns the finding of rule that carries the trial.
func tryCasebook(t *testing.T, caseName, prefix, rule string) *rules.Finding {
	t.Helper()
	// The current configuration is the runtime's default.
	for _, v := range []string{"GOGC", "GOMEMLIMIT", "GOMAXPROCS"} {
		t.Setenv(v, "")
		os.Unsetenv(v)
	}
	bin := buildCasebook(t)
	app, pprof := closedPort(t), closedPort(t)
	dir := t.TempDir()
	code, stdout, stderr := perfdoctor(t, "try", "--format", "json", "-o", dir,
		"--cmd", fmt.Sprintf("%sexec %s -case %s -variant bad -listen %s -pprof %s", prefix, bin, caseName, app, pprof),
		"--url", "http://"+app+"/", "--target", "http://"+pprof,
		"-c", "16", "-d", "1500ms", "--warmup", "700ms", "--rounds", "3", "--collect", "8s", "--only", rule)
	if code != 0 {
		t.Fatalf("try %s: exit %d\n%s", caseName, code, stderr)
	}
	schema, err := jsonschema.NewCompiler().Compile("../../docs/report.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(stdout))
	if err != nil {
		t.Fatal(err)
	}
	if err := schema.Validate(doc); err != nil {
		t.Errorf("try's report does not match docs/report.schema.json: %v", err)
	}
	var rep struct{ Findings []rules.Finding }
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatal(err)
	}
	for i, f := range rep.Findings {
		if f.Rule == rule && f.Tried != nil {
			t.Logf("%s %s: %+v, CPU gain %+v\n%s", caseName, rule, *f.Tried, *f.Tried.CPUGain, stderr)
			for _, name := range []string{"verify.json", "verify.md", "verify.html"} {
				if _, err := os.Stat(filepath.Join(dir, "try-1-"+rule, name)); err != nil {
					t.Errorf("the trial's %s: %v", name, err)
				}
			}
			return &rep.Findings[i]
		}
	}
	t.Fatalf("%s: no %s finding was tried\n%s\n%s", caseName, rule, stdout, stderr)
	return nil
}

// TestTryCasebookD1: GC001's GOMEMLIMIT and GOGC, tried on D1's bad
// variant, cut the CPU each request costs, and cost memory.
func TestTryCasebookD1(t *testing.T) {
	if testing.Short() {
		t.Skip("starts casebook services")
	}
	f := tryCasebook(t, "d1", "", "GC001")
	tr := f.Tried
	if !strings.Contains(tr.Config, "GOMEMLIMIT=") || !strings.Contains(tr.Config, "GOGC=") || tr.Rounds != 3 || tr.CPUGain == nil {
		t.Fatalf("trial %+v", tr)
	}
	if tr.CPUGain.Estimate <= 0 || tr.PredictedGain <= 0 {
		t.Errorf("GC headroom on D1: CPU gain %+v, predicted %.2f", *tr.CPUGain, tr.PredictedGain)
	}
	// GOGC in the thousands lets the heap grow many times the live heap.
	if tr.PeakRSSPrescribed < 2*tr.PeakRSSCurrent {
		t.Errorf("peak RSS %d -> %d bytes: the memory the headroom costs does not show", tr.PeakRSSCurrent, tr.PeakRSSPrescribed)
	}
}

// TestTryCasebookA3: SCHED001's GOMAXPROCS, tried on A3's bad variant
// (GOMAXPROCS=256) limited to one CPU.
func TestTryCasebookA3(t *testing.T) {
	if testing.Short() {
		t.Skip("starts casebook services")
	}
	prefix, how := oneCPU(t)
	t.Logf("one CPU through %s", how)
	f := tryCasebook(t, "a3", prefix, "SCHED001")
	tr := f.Tried
	// Under a one-CPU quota Go's own default, and SCHED001's, is 2 Ps;
	// pinned to one CPU, 1.
	want := "GOMAXPROCS=2"
	if strings.HasPrefix(how, "taskset") {
		want = "GOMAXPROCS=1"
	}
	if tr.Config != want || tr.Rounds != 3 || tr.CPUGain == nil || tr.PeakRSSCurrent == 0 || tr.PeakRSSPrescribed == 0 {
		t.Fatalf("trial %+v", tr)
	}
	if tr.CPUGain.Low > tr.CPUGain.Estimate || tr.CPUGain.Estimate > tr.CPUGain.High || tr.Prediction == "" {
		t.Errorf("CPU gain interval %+v, prediction %q", *tr.CPUGain, tr.Prediction)
	}
}

// oneCPU returns a shell prefix that runs a command on one CPU's worth:
// in a cgroup with a one-CPU quota that the test creates (cgroup v2
// cpu.max, else v1 cpu.cfs_quota_us) where the hierarchy lets it, else
// pinned with taskset.
func oneCPU(t *testing.T) (prefix, how string) {
	name := fmt.Sprintf("perfdoctor-try-%d", os.Getpid())
	// write only writes a file that exists: a cgroup file, never a stray
	// file on the tmpfs that holds the v1 hierarchies.
	write := func(path, value string) error {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
		if err != nil {
			return err
		}
		_, err = f.WriteString(value)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		return err
	}
	try := func(parent, file, value string) (string, bool) {
		dir := filepath.Join(parent, name)
		if os.Mkdir(dir, 0o755) != nil {
			return "", false
		}
		t.Cleanup(func() { os.Remove(dir) }) // try has stopped the services by then
		if file == "cpu.cfs_quota_us" && write(filepath.Join(dir, "cpu.cfs_period_us"), "100000") != nil {
			return "", false
		}
		if write(filepath.Join(dir, file), value) != nil {
			return "", false
		}
		return dir, true
	}
	// v2 where /sys/fs/cgroup is the unified hierarchy with the cpu
	// controller, delegated to children.
	if b, err := os.ReadFile("/sys/fs/cgroup/cgroup.controllers"); err == nil && strings.Contains(" "+string(b), " cpu") {
		write("/sys/fs/cgroup/cgroup.subtree_control", "+cpu")
		if dir, ok := try("/sys/fs/cgroup", "cpu.max", "100000 100000"); ok {
			return "echo $$ > " + dir + "/cgroup.procs && ", "cgroup v2 " + dir + "/cpu.max = 100000 100000"
		}
	}
	if _, err := os.Stat("/sys/fs/cgroup/cpu/cpu.cfs_quota_us"); err == nil {
		if dir, ok := try("/sys/fs/cgroup/cpu", "cpu.cfs_quota_us", "100000"); ok {
			return "echo $$ > " + dir + "/cgroup.procs && ", "cgroup v1 " + dir + "/cpu.cfs_quota_us = 100000 (period 100000)"
		}
	}
	if _, err := exec.LookPath("taskset"); err != nil {
		t.Skip("no writable cgroup and no taskset: cannot limit the service to one CPU")
	}
	return "taskset -c 0 ", "taskset -c 0"
}

func TestTryBadInput(t *testing.T) {
	dir := t.TempDir()
	notReport := filepath.Join(dir, "notes.json")
	os.WriteFile(notReport, []byte(`{"hello": 1}`), 0o644)
	noConfig := filepath.Join(dir, "report.json")
	os.WriteFile(noConfig, []byte(`{"schema_version": 2, "findings": [{"id": "CPU001", "rule": "CPU001", "severity": "low"}]}`), 0o644)
	url := "http://" + closedPort(t) + "/"
	for name, tc := range map[string]struct {
		args []string
		want string
	}{
		"no command":      {[]string{"try", "--url", url, "--target", url}, "--cmd COMMAND and --url URL"},
		"target and file": {[]string{"try", "--cmd", "true", "--url", url, "--target", url, "--report", noConfig}, "either --target"},
		"one round":       {[]string{"try", "--cmd", "true", "--url", url, "--report", noConfig, "--rounds", "1"}, "--rounds 1"},
		"missing report":  {[]string{"try", "--cmd", "true", "--url", url, "--report", filepath.Join(dir, "nope.json")}, "--report"},
		"not a report":    {[]string{"try", "--cmd", "true", "--url", url, "--report", notReport}, "not a perfdoctor JSON report"},
		"service exits":   {[]string{"try", "--cmd", "echo cannot start >&2; exit 3", "--url", url, "--target", url, "-o", filepath.Join(dir, "o")}, "cannot start"},
	} {
		t.Run(name, func(t *testing.T) {
			code, _, stderr := perfdoctor(t, tc.args...)
			wantOneLineError(t, code, stderr, tc.want)
		})
	}
	// Findings without a configuration fix: nothing to try, and no service started.
	code, stdout, stderr := perfdoctor(t, "try", "--cmd", "exit 3", "--url", url, "--report", noConfig, "-o", filepath.Join(dir, "none"))
	if code != 0 || !strings.Contains(stdout, "nothing to try") {
		t.Errorf("exit %d\n%s%s", code, stdout, stderr)
	}
}
