package jfr

import (
	"bytes"
	"context"
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

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
//	cputime/cputime.jfr  Temurin 25 with jdk.CPUTimeSample on (cputime/record.sh)
var nativeFixtures = []string{"jdk17.jfr", "jdk25.jfr", "ap-cpu.jfr", "ap-wall.jfr", "ap29-wall.jfr", "ap-e5.jfr", "cputime/cputime.jfr"}

// The native reader gives what the JDK's own reader (jfr print --json)
// gives on the same recordings: the same profiles, stack for stack, and
// the same JVM summary.
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
	native.JVM.End = jdk.JVM.End
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

// async-profiler's wall-clock samples are never CPU time as such: they
// form the wall profile, and a wall-only recording's CPU profile is derived
// from the samples whose thread was running (STATE_RUNNABLE), as Pyroscope
// reads them, each weighing the recording's interval (20 ms here); its
// native frames are named by function, without invented .java files.
func TestAsyncProfilerWallClock(t *testing.T) {
	rec, err := ReadFile("testdata/ap-wall.jfr")
	if err != nil {
		t.Fatal(err)
	}
	if rec.JVM.ExecutionSamples != 0 || rec.JVM.Sampler != SamplerRunning {
		t.Errorf("wall-clock samples read as execution samples: %d, sampler %q", rec.JVM.ExecutionSamples, rec.JVM.Sampler)
	}
	if rec.Wall == nil || count(rec.Wall) < 1000 {
		t.Fatalf("wall profile %v", rec.Wall != nil)
	}
	// jfr print --events profiler.WallClockSample ap-wall.jfr | grep -c STATE_RUNNABLE
	if n := count(rec.CPU); n != 150 {
		t.Errorf("%d CPU samples derived, want the 150 of running threads", n)
	}
	if rec.CPU != nil && (rec.CPU.Period != int64(20*time.Millisecond) || !slices.Contains(rec.CPU.Comments, SamplerComment+SamplerRunning)) {
		t.Errorf("derived CPU: period %d, comments %q", rec.CPU.Period, rec.CPU.Comments)
	}
	if w := rec.Wall.Sample[0]; w.Value[1] != w.Value[0]*int64(20*time.Millisecond) {
		t.Errorf("wall sample weighs %d for %d samples, want 20 ms each", w.Value[1], w.Value[0])
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
	if count(old.CPU) != 94 || count(old.Wall) != 1896 {
		t.Errorf("async-profiler 2.9 wall clock: cpu %d samples, wall %d, want the 94 running and 1896", count(old.CPU), count(old.Wall))
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
	object, system := map[string]string{}, map[string]string{}
	for _, l := range rec.CPU.Location {
		f := l.Line[0].Function
		object[f.Name], system[f.Name] = l.Mapping.File, f.SystemName
	}
	for fn, want := range map[string]string{
		"java_lang_Throwable::fill_in_stack_trace":  "libjvm.so",
		"JVM_FillInStackTrace":                      "libjvm.so",
		"entry_SYSCALL_64_after_hwframe":            "[kernel.kallsyms]",
		"java.lang.Throwable.fillInStackTrace":      "[java]",
		"casebook.e5.Login.parseOr":                 "[java]",
		"__vdso_clock_gettime":                      "[vdso]", // async-profiler's class "vdso", as perf names it
		"__tls_get_addr":                            "ld-linux-x86-64.so.2",
		"Java_sun_nio_ch_FileDispatcherImpl_write0": "libnio.so", // the JDK's JNI library
	} {
		if object[fn] != want {
			t.Errorf("%s in %q, want %q", fn, object[fn], want)
		}
	}
	// Named as perf names them (the rules' matchers are shared), with
	// jfr print's spelling, library first, as the system name.
	for fn, want := range map[string]string{
		"JVM_FillInStackTrace":           "libjvm.so.JVM_FillInStackTrace",
		"__vdso_clock_gettime":           "vdso.__vdso_clock_gettime",
		"entry_SYSCALL_64_after_hwframe": "entry_SYSCALL_64_after_hwframe",
		"casebook.e5.Login.parseOr":      "casebook.e5.Login.parseOr",
	} {
		if system[fn] != want {
			t.Errorf("%s: system name %q, want %q", fn, system[fn], want)
		}
	}
	for fn, file := range object {
		if file == "[java]" && !strings.Contains(fn, ".") {
			t.Errorf("native frame %q taken for Java", fn)
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
	for _, name := range []string{"ap-cpu.jfr", "ap-wall.jfr", "cputime/cputime.jfr"} {
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

// largeRecording is the benchmarks' large recording: $PERFDOCTOR_LARGE_JFR,
// else testdata/large/large.jfr as testdata/large/record.sh makes it (60 s
// of async-profiler on a busy program, several MB; not kept in the
// repository).
func largeRecording(b *testing.B) string {
	path := os.Getenv("PERFDOCTOR_LARGE_JFR")
	if path == "" {
		path = "testdata/large/large.jfr"
	}
	if _, err := os.Stat(path); err != nil {
		b.Skipf("no large recording (run testdata/large/record.sh, or set PERFDOCTOR_LARGE_JFR): %v", err)
	}
	return path
}

// BenchmarkReadLarge and BenchmarkJFRPrintJSONLarge read the large
// recording natively and through the JDK's tool; docs/inputs.md has the
// figures.
func BenchmarkReadLarge(b *testing.B) {
	data, err := os.ReadFile(largeRecording(b))
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

func BenchmarkJFRPrintJSONLarge(b *testing.B) {
	path := largeRecording(b)
	tool, err := Tool()
	if err != nil {
		b.Skip(err)
	}
	st, _ := os.Stat(path)
	b.SetBytes(st.Size())
	for b.Loop() {
		if _, err := ConvertWith(context.Background(), tool, path); err != nil {
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
		{"testdata/cputime/cputime.jfr", 300},    // JDK 25's CPU-time samples
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

// JDK 25's CPU-time sampler (jdk.CPUTimeSample, JEP 509) samples threads
// wherever they run: the CPU profile comes from it when a recording has it,
// says so, and weighs each sample its sampling period. On CPUTime.java
// (testdata/cputime, recorded on Temurin 25 with both samplers) it sees the
// compressing thread, in zlib under Deflater.deflateBytesBytes, that the
// execution sampler all but misses.
func TestCPUTimeSample(t *testing.T) {
	data, err := os.ReadFile("testdata/cputime/cputime.jfr")
	if err != nil {
		t.Fatal(err)
	}
	rec, err := Read(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	s := rec.JVM
	// jfr summary cputime.jfr: 855 jdk.CPUTimeSample, 453 jdk.ExecutionSample.
	if s.Sampler != SamplerCPUTime || s.CPUTimeSamples != 855 || count(rec.CPU) != 855 || s.ExecutionSamples != 855 {
		t.Errorf("sampler %q, %d CPU-time samples, %d in the profile, %d counted", s.Sampler, s.CPUTimeSamples, count(rec.CPU), s.ExecutionSamples)
	}
	if s.CPUTimeLost <= 0 || s.CPUTimeFailed != 0 {
		t.Errorf("lost %d, failed %d", s.CPUTimeLost, s.CPUTimeFailed)
	}
	if rec.CPU.Period != int64(10*time.Millisecond) || rec.CPU.Sample[0].Value[1] != rec.CPU.Sample[0].Value[0]*int64(10*time.Millisecond) ||
		!slices.Contains(rec.CPU.Comments, SamplerComment+SamplerCPUTime) {
		t.Errorf("period %d, first sample %v, comments %q", rec.CPU.Period, rec.CPU.Sample[0].Value, rec.CPU.Comments)
	}
	compressing := func(rec *Recording) float64 {
		var hit, all int64
		for _, smp := range rec.CPU.Sample {
			all += smp.Value[0]
			if smp.Location[0].Line[0].Function.Name == "java.util.zip.Deflater.deflateBytesBytes" {
				hit += smp.Value[0]
			}
		}
		return float64(hit) / float64(all)
	}
	execOnly, err := readInto(newConverter(), bytes.NewReader(data), slices.DeleteFunc(slices.Clone(Events), func(e string) bool { return e == "jdk.CPUTimeSample" }))
	if err != nil {
		t.Fatal(err)
	}
	if execOnly.JVM.Sampler != SamplerExecution || count(execOnly.CPU) != 453 {
		t.Fatalf("execution samples: sampler %q, %d samples", execOnly.JVM.Sampler, count(execOnly.CPU))
	}
	if cpuTime, exec := compressing(rec), compressing(execOnly); cpuTime < 0.3 || exec > 0.05 {
		t.Errorf("Deflater.deflateBytesBytes has %.2f of CPU-time samples and %.2f of execution samples, want over 0.3 and under 0.05", cpuTime, exec)
	}
}

// Every field setField reads is in eventFields, the fields the native
// reader decodes rather than skips: a name added to one and not the other
// would be silently skipped.
func TestEventFieldsCoverSetField(t *testing.T) {
	fset := token.NewFileSet()
	file, err := parser.ParseFile(fset, "native.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	ast.Inspect(file, func(node ast.Node) bool {
		fn, ok := node.(*ast.FuncDecl)
		if !ok || (fn.Name.Name != "setField" && fn.Name.Name != "setRef" && fn.Name.Name != "setNum") {
			return true
		}
		ast.Inspect(fn.Body, func(node ast.Node) bool {
			cc, ok := node.(*ast.CaseClause)
			if !ok {
				return true
			}
			for _, e := range cc.List {
				if lit, ok := e.(*ast.BasicLit); ok && lit.Kind == token.STRING {
					n++
					if name, _ := strconv.Unquote(lit.Value); !eventFields[name] {
						t.Errorf("%s reads field %q, which eventFields lacks", fn.Name.Name, name)
					}
				}
			}
			return true
		})
		return false
	})
	if n < 50 {
		t.Errorf("only %d field names found in setField, setRef and setNum", n)
	}
}
