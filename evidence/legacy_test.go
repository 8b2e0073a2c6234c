package evidence

import (
	"bytes"
	"compress/gzip"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"testing"

	"github.com/google/pprof/profile"
)

func gzipFile(t *testing.T, src, dst string) string {
	t.Helper()
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write(data)
	zw.Close()
	if err := os.WriteFile(dst, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return dst
}

// google/pprof's legacy formats, as the tools that write them do: a CPU
// and a heap profile from gperftools 2.10 (Debian's libgoogle-perftools,
// testdata/gperftools/work.c run with CPUPROFILE and HEAPPROFILE), and
// Go's own debug=1 text profiles. Each loads raw and gzipped alike.
func TestLegacyProfiles(t *testing.T) {
	dir := t.TempDir()
	goroutine := writeProfile(t, dir, "goroutine.txt", "goroutine", 1)
	threads := writeProfile(t, dir, "threadcreate.txt", "threadcreate", 1)
	for _, tc := range []struct {
		path    string
		kind    Kind
		samples int64 // at least
	}{
		{"testdata/gperftools/cpu.prof", CPU, 200},
		{"testdata/gperftools/heap.prof", Heap, 2000},
		{goroutine, Goroutine, 1},
	} {
		name := filepath.Base(tc.path)
		gz := gzipFile(t, tc.path, filepath.Join(dir, name+".gz"))
		var counts []int64
		for _, path := range []string{tc.path, gz} {
			ev, err := Load(context.Background(), LoadOptions{}, path)
			if err != nil {
				t.Errorf("%s: %v", path, err)
				continue
			}
			p := ev.Profile(tc.kind)
			if p == nil {
				t.Errorf("%s: no %s profile, files %+v", path, tc.kind, ev.Files)
				continue
			}
			n := SampleCount(p)
			if tc.kind == Heap {
				n = int64(len(p.Sample))
				for _, s := range p.Sample {
					n += s.Value[0] - 1
				}
			}
			if n < tc.samples {
				t.Errorf("%s: %d samples, want at least %d", path, n, tc.samples)
			}
			counts = append(counts, n)
		}
		if len(counts) == 2 && counts[0] != counts[1] {
			t.Errorf("%s: %d samples raw, %d gzipped", name, counts[0], counts[1])
		}
	}
	// gperftools profiles hold addresses only: the file says how to name them.
	ev, err := Load(context.Background(), LoadOptions{}, "testdata/gperftools/cpu.prof")
	if err != nil {
		t.Fatal(err)
	}
	if note := ev.Files[0].Note; !strings.Contains(note, "pprof -proto") {
		t.Errorf("unsymbolized profile without a note: %+v", ev.Files[0])
	}
	// A threadcreate profile written by this test's own process loads too.
	if ev, err := Load(context.Background(), LoadOptions{}, threads); err != nil || ev.Profile(ThreadCreate) == nil {
		t.Errorf("threadcreate profile: %v", err)
	}
}

// The legacy sample types google/pprof reads and classify did not, each
// from the tool that writes it: tcmalloc's heap sample (objects/space in
// use, /pprof/heap) and heap growth stacks (/pprof/growth), recorded here
// with gperftools 2.10 (testdata/gperftools/record.sh); Go's threadcreate
// profile as proto and as debug=1 text (testdata/gothreads); and threadz
// (thread/count), which no public tool writes any more, from google/pprof's
// own test corpus in the module cache. Each loads as pprof reads it, with a
// note that says what it holds.
func TestLegacySampleTypes(t *testing.T) {
	pprofDir := ""
	if out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/google/pprof").Output(); err == nil {
		pprofDir = filepath.Join(strings.TrimSpace(string(out)), "profile", "testdata")
	}
	for _, tc := range []struct {
		path    string
		kind    Kind
		types   string // sample types after loading
		samples int64  // the first sample type's total
		note    string
	}{
		{"testdata/gperftools/heap-sample.prof", Heap, "inuse_objects/count inuse_space/bytes", 50, "in use, without allocation counts"},
		{"testdata/gperftools/growth.prof", HeapGrowth, "objects/count space/bytes", 66, "where the heap grew"},
		{"testdata/gothreads/threadcreate.pb.gz", ThreadCreate, "threadcreate/count", 16, "15 of 16 threads have no creating stack"},
		{"testdata/gothreads/threadcreate.txt", ThreadCreate, "threadcreate/count", 16, "15 of 16 threads have no creating stack"},
		{filepath.Join(pprofDir, "cppbench.thread"), Threads, "thread/count", 0, "addresses only"},
	} {
		if tc.kind == Threads && pprofDir == "" {
			t.Log("google/pprof's test corpus not found: threadz not read")
			continue
		}
		t.Run(filepath.Base(tc.path), func(t *testing.T) {
			ev, err := Load(context.Background(), LoadOptions{}, tc.path)
			if err != nil {
				t.Fatal(err)
			}
			p := ev.Profile(tc.kind)
			if p == nil {
				t.Fatalf("no %s profile: files %+v", tc.kind, ev.Files)
			}
			var types []string
			for _, st := range p.SampleType {
				types = append(types, st.Type+"/"+st.Unit)
			}
			if got := strings.Join(types, " "); got != tc.types {
				t.Errorf("sample types %s, want %s", got, tc.types)
			}
			var n int64
			for _, s := range p.Sample {
				n += s.Value[0]
			}
			if tc.samples > 0 && n != tc.samples {
				t.Errorf("%d in the first sample type, want %d", n, tc.samples)
			}
			if note := ev.Files[0].Note; !strings.Contains(note, tc.note) {
				t.Errorf("note %q, want it to say %q", note, tc.note)
			}
		})
	}
	// The in-use heap sample is the heap the heap rules read; with no
	// allocation counts, the window's allocations are simply absent.
	ev, err := Load(context.Background(), LoadOptions{}, "testdata/gperftools/heap-sample.prof")
	if err != nil {
		t.Fatal(err)
	}
	if st := NewStacks(ev.Profile(Heap), "inuse_space"); st == nil || st.Total < 50<<20 {
		t.Errorf("in-use space %v, want the 50 MiB keep_big holds", st)
	}
	if p, _ := ev.WindowAllocs(); NewStacks(p, "alloc_space") != nil {
		t.Error("allocation stacks made from a heap sample without allocation counts")
	}
}

// Go's debug=1 mutex profile is a legacy contention profile.
func TestLegacyContention(t *testing.T) {
	var buf bytes.Buffer
	if err := pprof.Lookup("mutex").WriteTo(&buf, 1); err != nil {
		t.Fatal(err)
	}
	if !isLegacyProfile(buf.Bytes()) {
		t.Fatalf("mutex debug=1 not recognised: %.60q", buf.String())
	}
}

// Every format perfdoctor reads loads the same gzipped as plain.
func TestGzipTransparent(t *testing.T) {
	dir := t.TempDir()
	for _, src := range []string{
		"../formats/perfscript/testdata/multi-event.txt",
		"../formats/folded/testdata/async.collapsed",
		"testdata/gperftools/heap.prof",
		writeProfile(t, dir, "heap1.txt", "heap", 1),
		writeProfile(t, dir, "goroutine1.txt", "goroutine", 1),
	} {
		gz := gzipFile(t, src, filepath.Join(dir, filepath.Base(src)+".gz"))
		plain, err := Load(context.Background(), LoadOptions{}, src)
		if err != nil {
			t.Fatalf("%s: %v", src, err)
		}
		zipped, err := Load(context.Background(), LoadOptions{}, gz)
		if err != nil {
			t.Errorf("%s gzipped: %v", src, err)
			continue
		}
		if plain.Files[0].Kind != zipped.Files[0].Kind || len(plain.Profiles) != len(zipped.Profiles) || (plain.MetricsEnd == nil) != (zipped.MetricsEnd == nil) {
			t.Errorf("%s: read as %q plain, %q gzipped", src, plain.Files[0].Kind, zipped.Files[0].Kind)
		}
		for k, p := range plain.Profiles {
			if a, b := SampleCount(p), SampleCount(zipped.Profiles[k]); a != b {
				t.Errorf("%s %s: %d samples plain, %d gzipped", src, k, a, b)
			}
		}
	}
}

// A gzip stream cut short keeps the text before the cut, marked partial.
func TestGzipCutShortIsPartial(t *testing.T) {
	dir := t.TempDir()
	data, err := os.ReadFile("../formats/perfscript/testdata/multi-event.txt")
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write(data)
	zw.Close()
	cut := filepath.Join(dir, "perf.txt.gz")
	os.WriteFile(cut, buf.Bytes()[:buf.Len()*2/3], 0o644)
	ev, err := Load(context.Background(), LoadOptions{}, cut)
	if err != nil {
		t.Fatal(err)
	}
	if f := ev.Files[0]; !strings.Contains(f.Partial, "gzip stream cut short") {
		t.Errorf("cut gzip not marked partial: %+v", f)
	}
	if ev.Profile(Perf) == nil {
		t.Error("the samples before the cut were not kept")
	}
}

// Everything google/pprof's profile.Parse reads is read: its own test
// corpus of legacy profiles (C++ CPU, heap, growth, contention, thread;
// Go CPU, heap, thread; Java CPU, heap, contention), raw and gzipped.
// Each is filed as a profile, none skipped.
func TestEveryFormatPprofReads(t *testing.T) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/google/pprof").Output()
	if err != nil {
		t.Skipf("google/pprof module not found: %v", err)
	}
	corpus := filepath.Join(strings.TrimSpace(string(out)), "profile", "testdata")
	entries, err := os.ReadDir(corpus)
	if err != nil {
		t.Skipf("no pprof test corpus: %v", err)
	}
	dir := t.TempDir()
	n := 0
	for _, ent := range entries {
		if strings.HasSuffix(ent.Name(), ".string") {
			continue
		}
		path := filepath.Join(corpus, ent.Name())
		data, _ := os.ReadFile(path)
		if _, err := profile.ParseData(data); err != nil {
			continue // not one profile.Parse reads either
		}
		n++
		gz := gzipFile(t, path, filepath.Join(dir, ent.Name()+".gz"))
		for _, p := range []string{path, gz} {
			ev, err := Load(context.Background(), LoadOptions{}, p)
			switch {
			case err != nil:
				t.Errorf("%s: %v", p, err)
			case len(ev.Profiles) == 0:
				t.Errorf("%s: loaded without a profile", p)
			}
		}
	}
	if n < 10 {
		t.Errorf("only %d profiles in pprof's corpus", n)
	}
}
