package jvm

import (
	"context"
	"errors"
	"fmt"
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
	"github.com/perfdoctor/perfdoctor/internal/jvmtest"
)

// startWorkload compiles and starts formats/jfr's test workload for up to
// a minute, with a secret on its command line; the test's cleanup stops it.
func startWorkload(t *testing.T) int {
	t.Helper()
	return jvmtest.Start(t, "../../formats/jfr/testdata/Workload.java", "-Ddb.password=hunter2", "-Dapp.url=https://bob:s3cret@db.example/x", "Workload", "60000")
}

func TestMain(m *testing.M) {
	code := m.Run()
	jvmtest.Cleanup()
	os.Exit(code)
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
	pid := jvmtest.Start(t, "testdata/Deadlock.java", "Deadlock", "60000")
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

// A collection reads its own window alone: right after another recording
// of the same JVM (the --jvm of a moment ago), the second --jfr reports its
// own two seconds, not a span reaching back into the first.
func TestCollectReadsOwnWindow(t *testing.T) {
	pid := startWorkload(t)
	first := Options{PID: pid, Duration: 2 * time.Second, OutDir: filepath.Join(t.TempDir(), "jvm"), AsyncProfiler: true, ProfilerEvent: "itimer"}
	if jar := os.Getenv(ProfilerEnv); jar != "" {
		first.ProfilerLibrary = jar
	}
	if _, err := Collect(context.Background(), first); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "jfr")
	if _, err := Collect(context.Background(), Options{PID: pid, Duration: 2 * time.Second, OutDir: out}); err != nil {
		t.Fatal(err)
	}
	ev, err := evidence.Load(t.Context(), evidence.LoadOptions{}, out)
	if err != nil {
		t.Fatal(err)
	}
	if span := ev.JVM.End.Sub(ev.JVM.Start); span < 2*time.Second || span > 2500*time.Millisecond {
		t.Errorf("a 2s collection reports a %s window (%s to %s)", span, ev.JVM.Start, ev.JVM.End)
	}
	for _, kind := range []evidence.Kind{evidence.CPU, evidence.Mutex} {
		p := ev.Profile(kind)
		if p == nil {
			t.Errorf("no %v profile", kind)
			continue
		}
		if d := time.Duration(p.DurationNanos); d > 2500*time.Millisecond {
			t.Errorf("%v profile covers %s", kind, d)
		}
		// A wait begun before the window counts only its part inside it.
		for _, s := range p.Sample {
			if d := time.Duration(s.Value[1]); kind == evidence.Mutex && d > 2500*time.Millisecond {
				t.Errorf("a monitor wait of %s in a 2s window", d)
			}
		}
	}
}

// With a JVM that offers jdk.CPUTimeSample (JDK 25), the recording
// carries CPU-time samples and the manifest says both samplers ran; with
// JDK 17 the item says why there are none, and JFR's sampler still runs.
func TestCollectCPUTimeSampler(t *testing.T) {
	for _, tc := range []struct {
		major   int
		cpuTime bool
	}{{25, true}, {17, false}} {
		t.Run(fmt.Sprintf("JDK%d", tc.major), func(t *testing.T) {
			bin := jvmtest.Need(t, tc.major)
			pid := jvmtest.StartWith(t, bin, "../../formats/jfr/testdata/Workload.java", "Workload", "60000")
			out := filepath.Join(t.TempDir(), "b")
			m, err := Collect(context.Background(), Options{PID: pid, Duration: 2 * time.Second, OutDir: out})
			if err != nil {
				t.Fatal(err)
			}
			samplers := map[string]bundle.Sampler{}
			for _, s := range m.Samplers {
				samplers[s.Name] = s
			}
			if s := samplers["jdk.ExecutionSample"]; s.Samples == 0 || time.Duration(s.Interval) != 10*time.Millisecond {
				t.Errorf("JFR's execution sampler: %+v", m.Samplers)
			}
			s, ran := samplers["jdk.CPUTimeSample"]
			if ran != tc.cpuTime || ran && s.Samples == 0 {
				t.Errorf("CPU-time sampler: %+v, want ran=%v with samples", m.Samplers, tc.cpuTime)
			}
			var item bundle.Item
			for _, it := range m.Items {
				if it.Name == cpuTimeItem {
					item = it
				}
			}
			switch {
			case tc.cpuTime && item.Status != bundle.StatusOK:
				t.Errorf("item %+v", item)
			case !tc.cpuTime && (item.Status != bundle.StatusSkipped || !strings.Contains(item.Error, "JDK 25 and later")):
				t.Errorf("item %+v", item)
			}
			if m.Partial || !m.OK("cpu") {
				t.Errorf("manifest %+v", m)
			}
		})
	}
}
