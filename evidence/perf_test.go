package evidence

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/perfdoctor/perfdoctor/formats/perfscript"
)

// A perf script text file and the profile converted from it are both
// recognised as the perf profile, apart from the Go CPU profile.
func TestLoadPerf(t *testing.T) {
	text, err := os.ReadFile("../formats/perfscript/testdata/loopback-connect.txt")
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
		ev, err := Load(context.Background(), LoadOptions{}, paths...)
		if err != nil {
			t.Fatalf("%v: %v", paths, err)
		}
		perf := ev.Profile(Perf)
		if perf == nil {
			t.Fatalf("%v: no perf profile (files %+v)", paths, ev.Files)
		}
		kernel := map[string]bool{}
		for _, l := range perf.Location {
			if perfscript.IsKernel(l) {
				for _, ln := range l.Line {
					kernel[ln.Function.Name] = true
				}
			}
		}
		inKernel := func(fn string) bool { return kernel[fn] }
		st := NewStacks(perf, "samples")
		if st == nil || st.Share(inKernel) < 0.5 {
			t.Errorf("%v: kernel frames in %.2f of perf samples, want most", paths, st.Share(inKernel))
		}
		if len(paths) > 1 && ev.Profile(CPU) == nil {
			t.Errorf("%v: the Go CPU profile was lost", paths)
		}
		if c := ev.Profile(CPU); c != nil && c == perf {
			t.Errorf("%v: perf profile taken as the CPU profile", paths)
		}
	}
}

// Several events in one perf script file stay apart: the on-CPU one feeds
// the CPU rules, the others are kept by name and never summed into it.
func TestLoadPerfEvents(t *testing.T) {
	ev, err := Load(context.Background(), LoadOptions{}, "../formats/perfscript/testdata/multi-event.txt")
	if err != nil {
		t.Fatal(err)
	}
	if len(ev.PerfEvents) != 3 || ev.PerfEvents["page-faults"] == nil || ev.PerfEvents["task-clock:u"] == nil {
		t.Fatalf("events %v", ev.PerfEvents)
	}
	if got := perfscript.Event(ev.Profile(Perf)); got != "cpu-clock" {
		t.Errorf("perf profile is event %q, want cpu-clock", got)
	}
	if n := SampleCount(ev.Profile(CPU)); n != 60 {
		t.Errorf("CPU profile has %d samples, want cpu-clock's 60", n)
	}
	if k := ev.Files[0].Kind; !strings.Contains(k, "page-faults") || !strings.HasPrefix(k, "perf cpu-clock") {
		t.Errorf("file kind %q does not name the events", k)
	}

	// Page faults alone are no CPU time: no CPU profile is made of them.
	var faults strings.Builder
	for _, block := range strings.Split(string(mustRead(t, "../formats/perfscript/testdata/multi-event.txt")), "\n\n") {
		if strings.Contains(strings.SplitN(block, "\n", 2)[0], "page-faults:") {
			faults.WriteString(block + "\n\n")
		}
	}
	path := filepath.Join(t.TempDir(), "faults.txt")
	os.WriteFile(path, []byte(faults.String()), 0o644)
	ev, err = Load(context.Background(), LoadOptions{}, path)
	if err != nil {
		t.Fatal(err)
	}
	if ev.Profile(Perf) == nil || ev.Profile(CPU) != nil {
		t.Errorf("page faults only: perf %v, cpu %v", ev.Profile(Perf) != nil, ev.Profile(CPU) != nil)
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}
