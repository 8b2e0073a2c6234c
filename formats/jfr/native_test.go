package jfr

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/pprof/profile"
)

// Fixtures recorded here with an empty environment:
//
//	jdk17.jfr, jdk25.jfr  Workload under -XX:StartFlightRecording (JDK 17, Temurin 25)
//	ap-cpu.jfr   async-profiler 4.6 (Maven Central tools.profiler:async-profiler),
//	             event=itimer,alloc=512k,lock=1ms on JDK 17
//	ap-wall.jfr  async-profiler 4.6, event=wall,interval=20ms on JDK 17
//	ap29-wall.jfr  async-profiler 2.9, event=wall,interval=20ms: wall-clock
//	             samples written as jdk.ExecutionSample, sleeping or not
//	ap-e5.jfr    async-profiler 4.6 as collect --jvm loads it (event=cpu with
//	             perf events, cstack=vm, alloc=512k, lock=10ms) into casebook
//	             E5's bad variant under load for 3 s on JDK 17, as root: Java,
//	             VM, native and kernel frames, exceptions' stack walks among them
var nativeFixtures = []string{"jdk17.jfr", "jdk25.jfr", "ap-cpu.jfr", "ap-wall.jfr", "ap29-wall.jfr", "ap-e5.jfr"}

// The native reader gives what the JDK's own reader (jfr print --json)
// gives on the same recordings: the same profiles, stack for stack, and
// the same JVM summary. Wall-clock samples, which the JSON path does not
// ask the tool for, are compared on their own below.
func TestNativeMatchesJDKReader(t *testing.T) {
	tool := needTool(t)
	for _, name := range nativeFixtures {
		t.Run(name, func(t *testing.T) { matchJDKReader(t, tool, filepath.Join("testdata", name)) })
	}
}

// matchJDKReader reads the recording at path natively and with the JDK's
// jfr tool, and compares the two readings.
func matchJDKReader(t *testing.T, tool, path string) {
	t.Helper()
	native, err := ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	jdk, err := ConvertWith(context.Background(), tool, path)
	if err != nil {
		t.Fatal(err)
	}
	native.Wall, native.JVM.End = nil, jdk.JVM.End
	if a, b := render(native), render(jdk); a != b {
		t.Errorf("native and JDK readings differ:\n%s", firstDiff(a, b))
	}
}

func firstDiff(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := range min(len(al), len(bl)) {
		if al[i] != bl[i] {
			return "native: " + al[i] + "\njdk:    " + bl[i]
		}
	}
	return "lengths differ"
}

// JDK 17 and 25 recordings hold what the workload did.
func TestNativeFixtures(t *testing.T) {
	for file, version := range map[string]string{"jdk17.jfr": "17.", "jdk25.jfr": "25."} {
		t.Run(file, func(t *testing.T) {
			rec, err := ReadFile(filepath.Join("testdata", file))
			if err != nil {
				t.Fatal(err)
			}
			checkWorkload(t, rec, version)
		})
	}
}

// async-profiler's wall-clock samples are never CPU time: a wall-only
// recording has no CPU profile and says how many wall samples it holds;
// its native frames are named by function, without invented .java files.
func TestAsyncProfilerWallClock(t *testing.T) {
	rec, err := ReadFile("testdata/ap-wall.jfr")
	if err != nil {
		t.Fatal(err)
	}
	if rec.CPU != nil || rec.JVM.ExecutionSamples != 0 {
		t.Errorf("wall-clock samples read as CPU: %d", rec.JVM.ExecutionSamples)
	}
	if rec.Wall == nil || count(rec.Wall) < 1000 {
		t.Fatalf("wall profile %v", rec.Wall != nil)
	}
	if !hasFrame(rec.Wall, "__futex_abstimed_wait_common") {
		t.Error("native frame not named by its function")
	}
	for _, fn := range rec.Wall.Function {
		if strings.Contains(fn.Name, ".so") || (strings.HasPrefix(fn.Name, "__") && fn.Filename != "") {
			t.Errorf("native frame %q file %q", fn.Name, fn.Filename)
			break
		}
	}
	// async-profiler 2.9 wrote wall-clock samples as execution samples; its
	// "event" setting says they are wall clock, running threads included.
	old, err := ReadFile("testdata/ap29-wall.jfr")
	if err != nil {
		t.Fatal(err)
	}
	if old.CPU != nil || count(old.Wall) != 1896 {
		t.Errorf("async-profiler 2.9 wall clock: cpu %d samples, wall %d, want 0 and 1896", count(old.CPU), count(old.Wall))
	}
	cpu, err := ReadFile("testdata/ap-cpu.jfr")
	if err != nil {
		t.Fatal(err)
	}
	if cpu.CPU == nil || count(cpu.CPU) != 59 || cpu.Wall != nil || cpu.Allocs == nil || cpu.Monitor == nil {
		t.Errorf("async-profiler CPU recording: cpu %d, wall %v, allocs %v, locks %v", count(cpu.CPU), cpu.Wall != nil, cpu.Allocs != nil, cpu.Monitor != nil)
	}
	if !hasFrame(cpu.CPU, "Workload.spin") {
		t.Error("Workload.spin missing from async-profiler CPU samples")
	}
}

// async-profiler's CPU samples name it in the summary, and their native
// frames belong to their object: the kernel's as perf names it, libjvm.so
// for the VM's, so rules tell them from the Java code above.
func TestAsyncProfilerFrames(t *testing.T) {
	rec, err := ReadFile("testdata/ap-e5.jfr")
	if err != nil {
		t.Fatal(err)
	}
	if rec.JVM.Profiler != "async-profiler 4.6" || rec.CPU == nil {
		t.Fatalf("profiler %q, cpu %v", rec.JVM.Profiler, rec.CPU != nil)
	}
	object := map[string]string{}
	for _, l := range rec.CPU.Location {
		object[l.Line[0].Function.Name] = l.Mapping.File
	}
	for fn, want := range map[string]string{
		"java_lang_Throwable::fill_in_stack_trace": "libjvm.so",
		"JVM_FillInStackTrace":                     "libjvm.so",
		"entry_SYSCALL_64_after_hwframe":           "[kernel.kallsyms]",
		"java.lang.Throwable.fillInStackTrace":     "[java]",
		"casebook.e5.Login.parseOr":                "[java]",
	} {
		if object[fn] != want {
			t.Errorf("%s in %q, want %q", fn, object[fn], want)
		}
	}
	if jdk, _ := ReadFile("testdata/jdk17.jfr"); jdk.JVM.Profiler != "" {
		t.Errorf("JFR's own samples attributed to %q", jdk.JVM.Profiler)
	}
}

func TestExecutionSampleStates(t *testing.T) {
	for state, want := range map[string]bool{"": true, "STATE_RUNNABLE": true, "STATE_DEFAULT": true, "STATE_RUNNING": true,
		"STATE_SLEEPING": false, "STATE_IN_OBJECT_WAIT": false, "STATE_PARKED": false, "STATE_BLOCKED": false} {
		if onCPU(state) != want {
			t.Errorf("onCPU(%q) = %v", state, !want)
		}
	}
}

func count(p *profile.Profile) int64 {
	if p == nil {
		return 0
	}
	var n int64
	for _, s := range p.Sample {
		n += s.Value[0]
	}
	return n
}

// A recording is a sequence of chunks. One cut inside its second chunk
// keeps the first, marked partial; one cut inside its only chunk is an
// error saying so.
func TestNativeTruncated(t *testing.T) {
	a, _ := os.ReadFile("testdata/jdk17.jfr")
	b, _ := os.ReadFile("testdata/jdk25.jfr")
	two := append(append([]byte(nil), a...), b...)
	whole, err := Read(bytes.NewReader(two))
	if err != nil || whole.Partial != "" {
		t.Fatalf("two chunks: %v %q", err, whole.Partial)
	}
	if count(whole.CPU) != 99+124 {
		t.Errorf("two chunks: %d CPU samples, want 223", count(whole.CPU))
	}
	cut, err := Read(bytes.NewReader(two[:len(a)+len(b)/2]))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(cut.Partial, "chunk 2 cut short") || count(cut.CPU) != 99 {
		t.Errorf("cut in chunk 2: partial %q, %d CPU samples", cut.Partial, count(cut.CPU))
	}
	// A second chunk still being written (no final size yet) is left out.
	inProgress := bytes.Clone(two)
	copy(inProgress[len(a)+8:len(a)+16], make([]byte, 8))
	rec, err := Read(bytes.NewReader(inProgress))
	if err != nil || !strings.Contains(rec.Partial, "chunk 2") || count(rec.CPU) != 99 {
		t.Errorf("chunk in progress: %v, partial %q, %d CPU samples", err, rec.Partial, count(rec.CPU))
	}
	if _, err := Read(bytes.NewReader(a[:len(a)/2])); !errors.Is(err, ErrTruncated) {
		t.Errorf("cut in chunk 1: %v", err)
	}
	for name, data := range map[string][]byte{
		"empty":      nil,
		"magic only": []byte("FLR\x00"),
		"bad header": append([]byte("FLR\x00\x00\x02\x00\x00"), bytes.Repeat([]byte{7}, 100)...),
		"json":       []byte(`{"recording": {}}`),
	} {
		if _, err := Read(bytes.NewReader(data)); err == nil || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func FuzzRead(f *testing.F) {
	for _, name := range []string{"ap-cpu.jfr"} {
		data, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	// A recording of the thread events (pinning, lock parks, pools).
	data, err := os.ReadFile(gunzipFixture(f, threadFixture("locks")))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(data)
	f.Fuzz(func(t *testing.T, data []byte) {
		rec, err := Read(bytes.NewReader(data))
		if err != nil {
			return
		}
		for _, p := range []*profile.Profile{rec.CPU, rec.Allocs, rec.Monitor, rec.Wait, rec.Exceptions, rec.Wall} {
			if p == nil {
				continue
			}
			if err := p.CheckValid(); err != nil {
				t.Fatalf("invalid profile: %v", err)
			}
		}
	})
}

// BenchmarkReadNative and BenchmarkJFRPrintJSON read the same recording:
// the native reader, and the JDK's jfr print --json with the JSON decoder,
// which the native reader replaces.
func BenchmarkReadNative(b *testing.B) {
	data, err := os.ReadFile("testdata/jdk17.jfr")
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Read(bytes.NewReader(data)); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkJFRPrintJSON(b *testing.B) {
	tool, err := Tool()
	if err != nil {
		b.Skip(err)
	}
	if _, err := exec.LookPath(tool); err != nil {
		b.Skip(err)
	}
	st, _ := os.Stat("testdata/jdk17.jfr")
	b.SetBytes(st.Size())
	for b.Loop() {
		if _, err := ConvertWith(context.Background(), tool, "testdata/jdk17.jfr"); err != nil {
			b.Fatal(err)
		}
	}
}

// TestReadMutations runs the native reader over a fixed set of corrupted
// copies of a real recording (bytes changed, files cut): each must give a
// recording with valid profiles or an error, never a panic or a hang.
// FuzzRead explores further under go test -fuzz.
func TestReadMutations(t *testing.T) {
	for _, c := range []struct {
		path string
		n    int
	}{
		{"testdata/ap-cpu.jfr", 1000},
		{vmFixture("safepoints-jdk17.jfr"), 300}, // the VM's own events, in a larger JDK recording
	} {
		seed, err := os.ReadFile(c.path)
		if err != nil {
			t.Fatal(err)
		}
		rng := rand.New(rand.NewPCG(1, 2))
		for range c.n {
			d := bytes.Clone(seed)
			for range 1 + rng.IntN(8) {
				d[rng.IntN(len(d))] = byte(rng.IntN(256))
			}
			if rng.IntN(4) == 0 {
				d = d[:rng.IntN(len(d))]
			}
			rec, err := Read(bytes.NewReader(d))
			if err != nil {
				continue
			}
			for _, p := range []*profile.Profile{rec.CPU, rec.Allocs, rec.Monitor, rec.Wait, rec.Exceptions, rec.Wall} {
				if p != nil {
					if err := p.CheckValid(); err != nil {
						t.Fatalf("%s: invalid profile: %v", c.path, err)
					}
				}
			}
			checkVM(t, rec.JVM)
		}
	}
}
