package jvm

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/perfdoctor/perfdoctor/bundle"
	"github.com/perfdoctor/perfdoctor/evidence"
	"github.com/perfdoctor/perfdoctor/formats/jfr"
)

// startWorkload compiles and starts formats/jfr's test workload for up to
// a minute, with a secret on its command line; the test's cleanup stops it.
func startWorkload(t *testing.T) int {
	t.Helper()
	return startJava(t, "../../formats/jfr/testdata/Workload.java", "-Ddb.password=hunter2", "-Dapp.url=https://bob:s3cret@db.example/x", "Workload", "60000")
}

// startJava compiles src and runs java with args, and attaches once.
func startJava(t *testing.T, src string, args ...string) int {
	t.Helper()
	for _, tool := range []string{"java", "javac", "jcmd", "jfr"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("skipped: no %s on PATH (a JDK 17 or later is needed)", tool)
		}
	}
	dir := t.TempDir()
	src, _ = filepath.Abs(src)
	if out, err := exec.Command("javac", "-d", dir, src).CombinedOutput(); err != nil {
		t.Fatalf("javac: %v\n%s", err, out)
	}
	// JFR's repository in the test's directory: the JVM is killed, and a
	// killed JVM leaves it behind.
	cmd := exec.Command("java", append([]string{"-XX:FlightRecorderOptions:repository=" + t.TempDir(), "-cp", dir}, args...)...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	// Attach once, so the tests' timings do not include the JVM's start-up.
	if out, err := exec.Command("jcmd", strconv.Itoa(cmd.Process.Pid), "VM.version").CombinedOutput(); err != nil {
		t.Fatalf("jcmd: %v\n%s", err, out)
	}
	return cmd.Process.Pid
}

func TestCollect(t *testing.T) {
	pid := startWorkload(t)
	out := filepath.Join(t.TempDir(), "b")
	m, err := Collect(context.Background(), Options{PID: pid, Duration: 2 * time.Second, OutDir: out})
	if err != nil {
		t.Fatal(err)
	}
	if m.Partial || !m.OK("cpu") || !m.OK("jvm") || m.PID != pid {
		t.Fatalf("manifest %+v", m)
	}
	if _, err := os.Stat(filepath.Join(out, "recording.jfr")); !os.IsNotExist(err) {
		t.Error("the raw recording (with environment variables) was kept")
	}
	js, err := os.ReadFile(filepath.Join(out, bundle.JVMFile))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(js), "hunter2") || strings.Contains(string(js), "s3cret") || !strings.Contains(string(js), "db.password=REDACTED") {
		t.Errorf("secrets not redacted in jvm.json:\n%s", js)
	}
	ev, err := evidence.Load(t.Context(), evidence.LoadOptions{}, out)
	if err != nil {
		t.Fatal(err)
	}
	if ev.JVM == nil || ev.Profile(evidence.CPU) == nil || ev.Profile(evidence.Mutex) == nil || ev.Manifest == nil {
		t.Fatalf("bundle loads as %+v", ev.Files)
	}
}

func TestInterruptedWritesPartialBundle(t *testing.T) {
	pid := startWorkload(t)
	// The first JFR.start initialises the recorder, which can take seconds
	// on a loaded machine: do it before the clock starts.
	for _, args := range [][]string{{"JFR.start", "name=warm"}, {"JFR.stop", "name=warm"}} {
		if out, err := exec.Command("jcmd", append([]string{strconv.Itoa(pid)}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("jcmd: %v\n%s", err, out)
		}
	}
	out := filepath.Join(t.TempDir(), "b")
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Second)
	defer cancel()
	m, err := Collect(ctx, Options{PID: pid, Duration: time.Minute, OutDir: out})
	if !errors.Is(err, context.DeadlineExceeded) || m == nil || !m.Partial || !m.OK("cpu") {
		t.Fatalf("err %v manifest %+v", err, m)
	}
	if _, err := evidence.Load(t.Context(), evidence.LoadOptions{}, out); err != nil {
		t.Fatal(err)
	}
}

func TestErrors(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		opt  Options
		want string
	}{
		{Options{PID: 0, Duration: time.Second}, "needs a process ID"},
		{Options{PID: 1, Duration: time.Hour}, "outside 1s..10m"},
		{Options{PID: 1, Duration: time.Second, Settings: "max"}, "want profile or default"},
		{Options{PID: 1, Duration: time.Second, AsyncProfiler: true, ProfilerEvent: "wall"}, "want cpu or itimer"},
		{Options{PID: 1 << 30, Duration: time.Second, OutDir: filepath.Join(dir, "x")}, "no such process"},
	} {
		_, err := Collect(context.Background(), tc.opt)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: err %v, want %q", tc.opt, err, tc.want)
		}
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("left behind: %v", ents)
	}
}

func TestRedact(t *testing.T) {
	s := &jfr.Summary{
		JVMArguments:  "-Xmx1g -Ddb.password=pw1 -Dtoken=tk -Dplain=ok",
		JavaArguments: "app.jar --api-key abc https://u:pw2@h/",
		Properties:    map[string]string{"db.password": "pw3", "jdbc.url": "jdbc:postgresql://h/db?user=a&password=pw4", "user.dir": "/srv"},
		Flags:         []Flag{{Name: "StartFlightRecording", Value: "filename=x.jfr"}},
	}
	Redact(s)
	all := s.JVMArguments + s.JavaArguments + s.Properties["db.password"] + s.Properties["jdbc.url"]
	for _, secret := range []string{"pw1", "tk", "abc", "pw2", "pw3", "pw4"} {
		if strings.Contains(all, secret) {
			t.Errorf("%q left in %q", secret, all)
		}
	}
	if !strings.Contains(s.JVMArguments, "-Dplain=ok") || s.Properties["user.dir"] != "/srv" {
		t.Errorf("over-redacted: %+v", s)
	}
}

type Flag = jfr.Flag

func TestDeadlockReported(t *testing.T) {
	pid := startJava(t, "testdata/Deadlock.java", "Deadlock", "60000")
	out := filepath.Join(t.TempDir(), "b")
	if _, err := Collect(context.Background(), Options{PID: pid, Duration: time.Second, OutDir: out, Settings: "default"}); err != nil {
		t.Fatal(err)
	}
	ev, err := evidence.Load(t.Context(), evidence.LoadOptions{}, out)
	if err != nil {
		t.Fatal(err)
	}
	d := ev.JVM.Deadlock
	if !strings.HasPrefix(d, "Found one Java-level deadlock") || !strings.Contains(d, "worker-ab") || !strings.Contains(d, "worker-ba") {
		t.Fatalf("deadlock report %q", d)
	}
}

func TestJcmdMessage(t *testing.T) {
	for out, want := range map[string]string{
		"1:\ncom.sun.tools.attach.AttachNotSupportedException: Unable to open socket file /tmp/.java_pid1: target process 1 doesn't respond within 10500ms or HotSpot VM not loaded\n\tat jdk.attach/sun.tools.attach.VirtualMachineImpl.<init>(VirtualMachineImpl.java:104)\n\tat jdk.jcmd/sun.tools.jcmd.JCmd.main(JCmd.java:97)": "Unable to open socket file /tmp/.java_pid1: target process 1 doesn't respond within 10500ms or HotSpot VM not loaded (the target must be a HotSpot JVM, JDK 17 or later, run by this user)",
		"4242:\njava.lang.IllegalArgumentException: Unknown argument 'settings=nope'": "Unknown argument 'settings=nope'",
		"4242:\nCould not start recording, not able to write to file /x.jfr":          "Could not start recording, not able to write to file /x.jfr",
	} {
		if got := jcmdMessage(out); got != want {
			t.Errorf("jcmdMessage(%.40q) = %q, want %q", out, got, want)
		}
	}
}
