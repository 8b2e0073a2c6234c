package evidence

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/perfdoctor/perfdoctor/evidence/perfscript"
)

// A perf script text file and the profile converted from it are both
// recognised as the perf profile, apart from the Go CPU profile.
func TestLoadPerf(t *testing.T) {
	text, err := os.ReadFile("perfscript/testdata/loopback-connect.txt")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	txt := filepath.Join(dir, "out.perf")
	if err := os.WriteFile(txt, text, 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := perfscript.Parse(bytes.NewReader(text), perfscript.Options{MapDir: "-"})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := p.Write(&buf); err != nil {
		t.Fatal(err)
	}
	pb := filepath.Join(dir, "perf.pb.gz")
	if err := os.WriteFile(pb, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	cpu := writeCPU(t, dir, "cpu.pb.gz")
	for _, paths := range [][]string{{txt}, {pb}, {txt, cpu}, {dir}} {
		ev, err := Load(paths...)
		if err != nil {
			t.Fatalf("%v: %v", paths, err)
		}
		perf := ev.Profile(Perf)
		if perf == nil {
			t.Fatalf("%v: no perf profile (files %+v)", paths, ev.Files)
		}
		st := ev.PerfStacks()
		if st == nil || st.Share(ev.KernelFrames()) < 0.5 {
			t.Errorf("%v: kernel frames in %.2f of perf samples, want most", paths, st.Share(ev.KernelFrames()))
		}
		if len(paths) > 1 && ev.Profile(CPU) == nil {
			t.Errorf("%v: the Go CPU profile was lost", paths)
		}
		if c := ev.Profile(CPU); c != nil && c == perf {
			t.Errorf("%v: perf profile taken as the CPU profile", paths)
		}
	}
}
