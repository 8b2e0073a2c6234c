package jfr

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/pprof/profile"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// render prints a recording as stable text: each profile's heaviest stacks
// and the summary as JSON.
func render(rec *Recording) string {
	var b strings.Builder
	for _, p := range []struct {
		name string
		p    *profile.Profile
	}{{"cpu", rec.CPU}, {"allocs", rec.Allocs}, {"monitor", rec.Monitor}, {"wait", rec.Wait}, {"exceptions", rec.Exceptions}, {"wall", rec.Wall}} {
		if p.p == nil {
			fmt.Fprintf(&b, "== %s: none\n", p.name)
			continue
		}
		var types []string
		for _, st := range p.p.SampleType {
			types = append(types, st.Type+"/"+st.Unit)
		}
		fmt.Fprintf(&b, "== %s [%s] period %d duration %s comments %q\n", p.name, strings.Join(types, " "), p.p.Period, time.Duration(p.p.DurationNanos), p.p.Comments)
		var lines []string
		for _, s := range p.p.Sample {
			var fr []string
			for _, l := range s.Location {
				f := l.Line[0].Function
				name := fmt.Sprintf("%s:%d", f.Name, l.Line[0].Line)
				if l.Mapping.File != "[java]" { // native code: jfr print's name and the library
					name += fmt.Sprintf(" (%s in %s)", f.SystemName, l.Mapping.File)
				}
				fr = append(fr, name)
			}
			lines = append(lines, fmt.Sprintf("%v %v | %s", s.Value, s.Label, strings.Join(fr, " <- ")))
		}
		sort.Strings(lines)
		b.WriteString(strings.Join(lines, "\n") + "\n")
	}
	js, _ := json.MarshalIndent(rec.JVM, "", "  ")
	b.Write(js)
	b.WriteByte('\n')
	return b.String()
}

func TestGolden(t *testing.T) {
	f, err := os.Open("testdata/sample.json")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rec, err := Parse(f)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []*profile.Profile{rec.CPU, rec.Allocs, rec.Monitor, rec.Exceptions} {
		if p == nil {
			t.Fatal("a profile is missing")
		}
		if err := p.CheckValid(); err != nil {
			t.Fatal(err)
		}
	}
	got := render(rec)
	if *update {
		if err := os.WriteFile("testdata/sample.golden", []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile("testdata/sample.golden")
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	if rate, ok := rec.JVM.ExceptionsPerMinute(); !ok || rate != 3000*60 {
		t.Errorf("exceptions per minute %v %v, want 180000", rate, ok)
	}
}

func TestParseErrors(t *testing.T) {
	for in, want := range map[string]string{
		"":                              "not jfr print --json output",
		`{"recording": {"events": []}}`: "none of the events",
		`{"recording": {"events": [{"type": "jdk.CPULoad", "values": {"startTime": 3}}]}}`: "event 1",
		`{"other": 1}`:                  `no "recording"`,
		`{"recording": {"events": {}}}`: "want",
		`{"recording": {"events": [{"type": "jdk.GarbageCollection", "values": {"sumOfPauses": "1s"}}]}}`: "ISO-8601",
		`{"recording": {"events": [{"type": "x"}`:                                                         "after event 1",
	} {
		_, err := Parse(strings.NewReader(in))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Parse(%.40q) = %v, want an error containing %q", in, err, want)
		}
	}
}

func TestParseDuration(t *testing.T) {
	for in, want := range map[string]time.Duration{
		"PT0S": 0, "PT0.004515946S": 4515946, "PT1M2.5S": 62500 * time.Millisecond, "P1DT1H": 25 * time.Hour,
		"PT-2562047788015215H-30M-8S": -1 << 63, "PT2562047788015215H30M7.999999999S": 1<<63 - 1,
	} {
		got, err := ParseDuration(in)
		if err != nil || got != want {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "1s", "P1M", "PTS", "PTxS"} {
		if _, err := ParseDuration(in); err == nil {
			t.Errorf("ParseDuration(%q) accepted", in)
		}
	}
}

func TestMissingTool(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	t.Setenv("JAVA_HOME", "")
	_, err := ConvertFile(context.Background(), "testdata/jdk17.jfr")
	if !errors.Is(err, ErrNoTool) || !strings.Contains(err.Error(), "jfr tool") {
		t.Fatalf("err = %v, want ErrNoTool", err)
	}
}

func TestCorruptRecording(t *testing.T) {
	tool := needTool(t)
	bad := filepath.Join(t.TempDir(), "bad.jfr")
	if err := os.WriteFile(bad, append([]byte("FLR\x00"), bytes.Repeat([]byte{7}, 100)...), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := ConvertWith(context.Background(), tool, bad)
	if err == nil || !strings.Contains(err.Error(), "bad.jfr") || strings.Contains(err.Error(), "\n") {
		t.Fatalf("err = %v, want one line naming the file", err)
	}
}

func needTool(t *testing.T) string {
	t.Helper()
	tool, err := Tool()
	if err != nil {
		t.Skipf("skipped: %v", err)
	}
	return tool
}

// checkWorkload asserts what a recording of testdata/Workload.java holds.
func checkWorkload(t *testing.T, rec *Recording, version string) {
	t.Helper()
	s := rec.JVM
	if !strings.Contains(s.JVMVersion, version) {
		t.Errorf("JVM version %q, want %s", s.JVMVersion, version)
	}
	if rec.CPU == nil || s.ExecutionSamples < 10 {
		t.Fatalf("%d execution samples", s.ExecutionSamples)
	}
	if !hasFrame(rec.CPU, "Workload.spin") {
		t.Error("no Workload.spin frame in the CPU profile")
	}
	if rec.Allocs == nil || !hasFrame(rec.Allocs, "Workload.main") {
		t.Error("no allocation samples from Workload.main")
	}
	if rec.Exceptions == nil || !hasLabel(rec.Exceptions, "class", "java.lang.NumberFormatException") {
		t.Error("no NumberFormatException throws")
	}
	if s.GC.Explicit < 1 || len(s.GC.ExplicitCallers) == 0 || s.GC.ExplicitCallers[0] != "Workload.main" {
		t.Errorf("explicit GCs %d by %v, want Workload.main's System.gc()", s.GC.Explicit, s.GC.ExplicitCallers)
	}
	if s.GC.Young == "" || s.Cores == 0 || s.Properties["java.vm.version"] == "" || s.Span() < time.Second {
		t.Errorf("summary incomplete: %+v", s)
	}
	for _, p := range []*profile.Profile{rec.CPU, rec.Allocs, rec.Monitor, rec.Wait, rec.Exceptions} {
		if p != nil {
			if err := p.CheckValid(); err != nil {
				t.Error(err)
			}
		}
	}
}

func hasFrame(p *profile.Profile, name string) bool {
	for _, f := range p.Function {
		if f.Name == name {
			return true
		}
	}
	return false
}

func hasLabel(p *profile.Profile, key, value string) bool {
	for _, s := range p.Sample {
		for _, v := range s.Label[key] {
			if v == value {
				return true
			}
		}
	}
	return false
}

// TestFixtures converts the committed recordings of Workload from JDK 17
// and JDK 25 with whatever jfr tool is installed.
func TestFixtures(t *testing.T) {
	tool := needTool(t)
	for file, version := range map[string]string{"jdk17.jfr": "17.", "jdk25.jfr": "25."} {
		t.Run(file, func(t *testing.T) {
			rec, err := ConvertWith(context.Background(), tool, filepath.Join("testdata", file))
			if err != nil {
				t.Fatal(err)
			}
			checkWorkload(t, rec, version)
		})
	}
}

// jdks finds the installed JDKs (with javac and jfr) by major version.
func jdks() map[int]string {
	out := map[int]string{}
	dirs, _ := filepath.Glob("/usr/lib/jvm/*")
	if home := os.Getenv("JAVA_HOME"); home != "" {
		dirs = append(dirs, home)
	}
	version := regexp.MustCompile(`(?m)^JAVA_VERSION="(\d+)`)
	for _, d := range dirs {
		rel, err := os.ReadFile(filepath.Join(d, "release"))
		if err != nil {
			continue
		}
		m := version.FindSubmatch(rel)
		if m == nil {
			continue
		}
		var major int
		fmt.Sscan(string(m[1]), &major)
		if _, err := os.Stat(filepath.Join(d, "bin", "javac")); err != nil {
			continue
		}
		if _, err := os.Stat(filepath.Join(d, "bin", "jfr")); err == nil && out[major] == "" {
			out[major] = d
		}
	}
	return out
}

// TestRecordWithEachJDK compiles Workload with JDK 17 and JDK 25, records
// 1.5 s of it with each, and converts each recording with that JDK's tool.
func TestRecordWithEachJDK(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped in -short: runs two JVMs")
	}
	found := jdks()
	for _, major := range []int{17, 25} {
		t.Run(fmt.Sprint("jdk", major), func(t *testing.T) {
			home := found[major]
			if home == "" {
				t.Skipf("skipped: no JDK %d with javac and jfr under /usr/lib/jvm or JAVA_HOME", major)
			}
			dir := t.TempDir()
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			run := func(name string, args ...string) {
				cmd := exec.CommandContext(ctx, filepath.Join(home, "bin", name), args...)
				cmd.Dir = dir
				cmd.Env = []string{"PATH=/usr/bin:/bin"} // keep the test's environment out of the recording
				if out, err := cmd.CombinedOutput(); err != nil {
					t.Fatalf("%s: %v\n%s", name, err, out)
				}
			}
			src, err := filepath.Abs("testdata/Workload.java")
			if err != nil {
				t.Fatal(err)
			}
			run("javac", "-d", dir, src)
			rec := filepath.Join(dir, "w.jfr")
			run("java", "-cp", dir, "-XX:StartFlightRecording=filename="+rec+",settings=profile,+jdk.JavaExceptionThrow#enabled=true", "Workload", "1500")
			r, err := ConvertWith(ctx, filepath.Join(home, "bin", "jfr"), rec)
			if err != nil {
				t.Fatal(err)
			}
			checkWorkload(t, r, fmt.Sprint(major, "."))
		})
	}
}

func FuzzParse(f *testing.F) {
	for _, name := range []string{"sample.json", "vm.json"} {
		seed, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(seed)
	}
	f.Add([]byte(`{"recording": {"events": [{"type": "jdk.ExceptionStatistics", "values": {"throwables": 5}}]}}`))
	f.Add([]byte(`{"recording": {"events": [{"type": "jdk.CPUTimeSample", "values": {"samplingPeriod": "PT0.01S", "failed": false,
		"eventThread": {"javaName": "w"}, "stackTrace": {"frames": [{"method": {"type": {"name": "libz.so.1"}, "name": "deflate", "descriptor": "()L;"},
		"type": "Native"}]}}}, {"type": "jdk.CPUTimeSamplesLost", "values": {"lostSamples": 3}},
		{"type": "profiler.WallClockSample", "values": {"state": "STATE_RUNNABLE", "samples": 2}}]}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		rec, err := Parse(bytes.NewReader(data))
		if err != nil {
			return
		}
		for _, p := range []*profile.Profile{rec.CPU, rec.Allocs, rec.Monitor, rec.Wait, rec.Exceptions} {
			if p == nil {
				continue
			}
			if err := p.CheckValid(); err != nil {
				t.Fatalf("invalid profile: %v", err)
			}
			if err := p.Write(&bytes.Buffer{}); err != nil {
				t.Fatal(err)
			}
		}
		if rec.JVM.Exceptions < 0 || rec.JVM.Span() < 0 {
			t.Fatalf("negative counts: %+v", rec.JVM)
		}
		checkVM(t, rec.JVM)
	})
}

func BenchmarkParse(b *testing.B) {
	data, err := os.ReadFile("testdata/sample.json")
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := Parse(bytes.NewReader(data)); err != nil {
			b.Fatal(err)
		}
	}
}
