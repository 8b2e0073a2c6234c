package javacases

import (
	"archive/zip"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/perfdoctor/perfdoctor/bundle"
	"github.com/perfdoctor/perfdoctor/casebook/internal/harness"
	"github.com/perfdoctor/perfdoctor/collect/jvm"
	"github.com/perfdoctor/perfdoctor/evidence"
	"github.com/perfdoctor/perfdoctor/facts"
	"github.com/perfdoctor/perfdoctor/rules/jvm001"
)

// asyncProfiler is the async-profiler jar scripts/test.sh fetches from
// Maven Central (checksum checked) and names in $PERFDOCTOR_ASYNC_PROFILER.
func asyncProfiler(t *testing.T) string {
	t.Helper()
	jar := os.Getenv(jvm.ProfilerEnv)
	if jar == "" {
		if harness.InCI() {
			t.Fatalf("CI is set and %s is not: scripts/test.sh fetches async-profiler", jvm.ProfilerEnv)
		}
		t.Skipf("skipped: %s is not set (scripts/test.sh fetches async-profiler %s from Maven Central)", jvm.ProfilerEnv, jvm.ProfilerVersion)
	}
	if _, err := os.Stat(jar); err != nil {
		t.Fatalf("%s: %v", jvm.ProfilerEnv, err)
	}
	return jar
}

// temurin is a JDK 21 or later beside Debian's 17 (the machine image has
// Temurin 25), or "" without one.
func temurin() string {
	dirs, _ := filepath.Glob("/usr/lib/jvm/temurin-2[1-9]-jdk-*")
	if len(dirs) == 0 {
		return ""
	}
	return filepath.Join(dirs[len(dirs)-1], "bin")
}

// TestE5AsyncProfiler: collect --jvm loads async-profiler into E5's bad
// variant. Its CPU samples hold the exception's stack walk inside the VM,
// which JFR's sampler misses, and E5's top finding is measured from them
// rather than estimated from the throw rate. On Debian's JDK 17, and on
// Temurin 25 when the machine has it. Always run: it is CI's live check of
// the async-profiler path (see casesEnv).
func TestE5AsyncProfiler(t *testing.T) {
	need(t)
	lib := asyncProfiler(t)
	jdks := []struct {
		name string
		jdk  jdk
	}{{"jdk17", jdk{}}}
	if bin := temurin(); bin != "" {
		jdks = append(jdks, struct {
			name string
			jdk  jdk
		}{filepath.Base(filepath.Dir(bin)), jdk{bin: bin}})
	}
	for _, j := range jdks {
		t.Run(j.name, func(t *testing.T) {
			s := startOn(t, j.jdk, "e5/Login.java", "casebook.e5.Login", "bad")
			findings, dir, rps := diagnose(t, s, plan{name: "e5-bad-asyncprofiler", want: e5AsyncWant,
				needCPU: true, flag: "--jvm", args: []string{"--async-profiler", lib}})
			m, err := bundle.ReadManifest(dir)
			if err != nil {
				t.Fatal(err)
			}
			if !m.OK("async-profiler") {
				t.Fatalf("async-profiler did not record: %+v", m.Failed())
			}
			ev, err := evidence.Load(t.Context(), evidence.LoadOptions{}, dir)
			if err != nil {
				t.Fatal(err)
			}
			if ev.JVM == nil || !strings.HasPrefix(ev.JVM.Profiler, "async-profiler") {
				t.Fatalf("the JVM summary does not name async-profiler: %+v", ev.JVM)
			}
			cpu := facts.Read(ev, facts.CPUStacks)
			walk := cpu.Share(evidence.FuncPrefix("java.lang.Throwable.fillInStackTrace"))
			vm := cpu.Share(evidence.FuncPrefix("java_lang_Throwable::fill_in_stack_trace", "JVM_FillInStackTrace"))
			if walk == 0 || vm == 0 {
				t.Errorf("CPU profile: fillInStackTrace in %.1f%% of samples, the VM's stack walk in %.1f%%", 100*walk, 100*vm)
			}
			// Kernel frames need perf events, which root has whatever
			// kernel.perf_event_paranoid says.
			if kernel := cpu.Share(facts.Read(ev, facts.KernelFrames)); os.Geteuid() == 0 && kernel == 0 {
				t.Error("no kernel frames in the CPU profile")
			}
			if len(findings) == 0 || findings[0].Class != "exception-overhead" {
				t.FailNow() // diagnose said why
			}
			measured, estimate := findings[0].Fact(t, jvm001.MeasuredFact), 0.0
			for _, e := range findings[0].Evidence {
				if strings.HasPrefix(e.Name, "estimate at") {
					estimate = e.Number
				}
			}
			t.Logf("%s: exceptions measured at %.1f%% of CPU (the VM's stack walk alone %.1f%%; the throw-rate estimate, not used, %.1f%%); %.0f requests/s under async-profiler",
				j.name, 100*measured, 100*vm, 100*estimate, rps)
		})
	}
}

// e5AsyncWant is what E5's bad variant must show under async-profiler:
// exception-overhead first, its share measured from the samples.
var e5AsyncWant = e5.want("bad") + "# async-profiler's samples: the share measured, not estimated from the throw rate\n" +
	"top exception-overhead " + strconv.Quote(jvm001.MeasuredFact) + "\n"

// TestJVMFallsBackToJFR: a JVM that refuses async-profiler is recorded with
// JFR alone, and collect says why in the manifest and in one line on
// stderr. The refusal is a JDK 21+ started with
// -XX:-EnableDynamicAgentLoading where the machine has one, else the
// library of the other architecture, which the JVM cannot load. Always
// run, and nothing kept: what it checks is the collection itself.
func TestJVMFallsBackToJFR(t *testing.T) {
	need(t)
	lib := asyncProfiler(t)
	j, want := jdk{}, "was not loaded"
	if bin := temurin(); bin != "" {
		j, want = jdk{bin: bin, opts: []string{"-XX:-EnableDynamicAgentLoading"}}, "Dynamic agent loading is not enabled"
	} else {
		lib = otherArchLibrary(t, lib)
	}
	s := startOn(t, j, "e5/Login.java", "casebook.e5.Login", "bad")
	dir, out, _ := recordUnderLoad(t, s, 2*time.Second, "--jvm", "--async-profiler", lib)
	var lines []string
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, "async-profiler") {
			lines = append(lines, l)
		}
	}
	if len(lines) != 1 || !strings.Contains(lines[0], "JFR alone") || !strings.Contains(lines[0], want) {
		t.Errorf("stderr does not say in one line that JFR recorded alone and why (%q):\n%s", want, out)
	}
	m, err := bundle.ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	failed := m.Failed()
	if len(failed) != 1 || failed[0].Name != "async-profiler" || !strings.Contains(failed[0].Error, want) || !m.OK("cpu") || !m.OK("jvm") {
		t.Fatalf("manifest: failed %+v, cpu %v, jvm %v", failed, m.OK("cpu"), m.OK("jvm"))
	}
	ev, err := evidence.Load(t.Context(), evidence.LoadOptions{}, dir)
	if err != nil {
		t.Fatal(err)
	}
	if ev.JVM.Profiler != "" {
		t.Errorf("JFR's samples attributed to %q", ev.JVM.Profiler)
	}
}

// otherArchLibrary extracts the jar's library for the other architecture.
func otherArchLibrary(t *testing.T, jar string) string {
	t.Helper()
	other := "linux-arm64"
	if runtime.GOARCH == "arm64" {
		other = "linux-x64"
	}
	zr, err := zip.OpenReader(jar)
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	f, err := zr.Open(other + "/libasyncProfiler.so")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	data, err := io.ReadAll(f)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "libasyncProfiler.so")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}
