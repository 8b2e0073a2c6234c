package evidence

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLoadFolded(t *testing.T) {
	e, err := Load(context.Background(), LoadOptions{}, "../formats/folded/testdata/async.collapsed")
	if err != nil {
		t.Fatal(err)
	}
	if e.Files[0].Kind != "folded" || e.Profile(CPU) == nil {
		t.Fatalf("files %+v", e.Files)
	}
	if s := NewStacks(e.Profile(CPU), "cpu").Share(FuncPrefix("java.lang.Throwable.fillInStackTrace")); s < 0.5 {
		t.Errorf("fillInStackTrace share %.2f", s)
	}
}

// Recordings are read natively: no JDK is needed.
func TestLoadJFR(t *testing.T) {
	e, err := Load(context.Background(), LoadOptions{}, "../formats/jfr/testdata/jdk25.jfr")
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []Kind{CPU, Allocs, Mutex, Exceptions} {
		if e.Profile(k) == nil {
			t.Errorf("no %s profile", k)
		}
	}
	if e.JVM == nil || e.JVM.GC.Explicit == 0 || e.Window() <= 0 {
		t.Fatalf("JVM summary %+v window %v", e.JVM, e.Window())
	}

	// Written out as a bundle would hold them, the profiles keep their kinds.
	dir := t.TempDir()
	for name, k := range map[string]Kind{"cpu.pb.gz": CPU, "allocs.pb.gz": Allocs, "mutex.pb.gz": Mutex, "exceptions.pb.gz": Exceptions} {
		f, err := os.Create(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := e.Profile(k).Write(f); err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	js, _ := json.Marshal(e.JVM)
	if err := os.WriteFile(filepath.Join(dir, "jvm.json"), js, 0o644); err != nil {
		t.Fatal(err)
	}
	back, err := Load(context.Background(), LoadOptions{}, dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range back.Files {
		if f.Reason != "" || strings.TrimSuffix(filepath.Base(f.Path), ".pb.gz") != f.Kind && f.Kind != "jvm" {
			t.Errorf("file %+v", f)
		}
	}
	if back.JVM == nil || back.JVM.GC.Explicit != e.JVM.GC.Explicit {
		t.Errorf("JVM summary not read back: %+v", back.JVM)
	}
}

// No JDK is needed to diagnose a recording.
func TestLoadJFRWithoutTool(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	t.Setenv("JAVA_HOME", "")
	e, err := Load(context.Background(), LoadOptions{}, "../formats/jfr/testdata/jdk17.jfr")
	if err != nil || e.Profile(CPU) == nil {
		t.Fatalf("without a JDK: %v", err)
	}
	// A recording cut inside its only chunk is an error naming the file.
	data, _ := os.ReadFile("../formats/jfr/testdata/jdk17.jfr")
	cut := filepath.Join(t.TempDir(), "cut.jfr")
	os.WriteFile(cut, data[:len(data)/2], 0o644)
	if _, err := Load(context.Background(), LoadOptions{}, cut); err == nil || !strings.Contains(err.Error(), "cut short") || !strings.Contains(err.Error(), "cut.jfr") {
		t.Errorf("cut recording: %v", err)
	}
}

func TestIsJava(t *testing.T) {
	for fn, want := range map[string]bool{
		"com.acme.api.Server.handle":                     true,
		"java.lang.Throwable.<init>":                     true,
		"org.springframework.util.AntPathMatcher.match":  true,
		"com.acme.Foo$$Lambda$14.0x0000000800c0b0.run":   true,
		"time.Time.Format":                               false,
		"main.handle":                                    false,
		"sort.insertionSort.func1":                       false,
		"net/http.(*conn).serve":                         false,
		"github.com/perfdoctor/perfdoctor/evidence.Load": false,
	} {
		if IsJava(fn) != want {
			t.Errorf("IsJava(%q) = %v", fn, !want)
		}
	}
	if !IsJavaApp("com.acme.api.Server.handle") || IsJavaApp("java.lang.String.equals") {
		t.Error("IsJavaApp")
	}
}

// A gzipped recording reads as the recording does.
func TestLoadGzippedJFR(t *testing.T) {
	gz := gzipFile(t, "../formats/jfr/testdata/jdk17.jfr", filepath.Join(t.TempDir(), "rec.jfr.gz"))
	e, err := Load(context.Background(), LoadOptions{}, gz)
	if err != nil {
		t.Fatal(err)
	}
	if e.Files[0].Kind != "jfr" || e.Profile(CPU) == nil || e.JVM == nil {
		t.Errorf("gzipped JFR read as %+v", e.Files)
	}
}

// An async-profiler wall-clock recording gives a CPU profile derived from
// the samples of running threads, as Pyroscope reads it, and the file says
// so and how to record measured CPU.
func TestLoadWallClockOnlyJFR(t *testing.T) {
	for path, running := range map[string]int64{"../formats/jfr/testdata/ap-wall.jfr": 150, "../formats/jfr/testdata/ap29-wall.jfr": 94} {
		e, err := Load(context.Background(), LoadOptions{}, path)
		if err != nil {
			t.Fatal(err)
		}
		if n := SampleCount(e.Profile(CPU)); n != running || e.Profile(Wall) == nil {
			t.Errorf("%s: %d CPU samples, want the %d of running threads; wall %v", path, n, running, e.Profile(Wall) != nil)
		}
		if note := e.Files[0].Note; !strings.Contains(note, "CPU derived from wall-clock samples") || !strings.Contains(note, "event=cpu") {
			t.Errorf("%s: note %q", path, note)
		}
	}
}
