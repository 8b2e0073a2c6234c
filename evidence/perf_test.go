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

// --perf-event picks the event of a multi-event file that becomes the perf
// profile (and, when it is on-CPU, the CPU profile); a name the input lacks
// is an error listing the events it has.
func TestPickPerfEvent(t *testing.T) {
	const multi = "../formats/perfscript/testdata/multi-event.txt"
	ev, err := Load(context.Background(), LoadOptions{PerfEvent: "task-clock:u"}, multi)
	if err != nil {
		t.Fatal(err)
	}
	if got := perfscript.Event(ev.Profile(Perf)); got != "task-clock:u" {
		t.Errorf("perf profile is event %q, want the task-clock:u asked for", got)
	}
	if n := SampleCount(ev.Profile(CPU)); n != 40 {
		t.Errorf("CPU profile has %d samples, want task-clock:u's 40", n)
	}
	ev, err = Load(context.Background(), LoadOptions{PerfEvent: "page-faults"}, multi)
	if err != nil {
		t.Fatal(err)
	}
	if got := perfscript.Event(ev.Profile(Perf)); got != "page-faults" || ev.Profile(CPU) != nil {
		t.Errorf("page-faults asked for: perf profile %q, CPU profile %v", got, ev.Profile(CPU) != nil)
	}
	if note := ev.Files[0].Note; !strings.Contains(note, "not CPU time") {
		t.Errorf("a non-CPU event chosen without a note: %q", note)
	}
	for _, tc := range []struct{ event, path string }{
		{"cycles", multi},
		{"cpu-clock", "../formats/folded/testdata/async.collapsed"},
	} {
		_, err := Load(context.Background(), LoadOptions{PerfEvent: tc.event}, tc.path)
		if err == nil || strings.Contains(err.Error(), "\n") {
			t.Errorf("--perf-event %s on %s: %v, want a one-line error", tc.event, tc.path, err)
		}
	}
	_, err = Load(context.Background(), LoadOptions{PerfEvent: "cycles"}, multi)
	for _, want := range []string{`"cycles"`, "cpu-clock (60 samples)", "page-faults (12 samples)", "task-clock:u (40 samples)"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("unknown event: %v, want it to name %s", err, want)
		}
	}
}

// perf script printed without timestamps or periods (FlameGraph's test
// inputs have that shape; these were recorded here with perf 6.1) loads as
// perf and CPU profiles, and the file's note says what the headers lacked.
func TestLoadPerfWithoutTimestamps(t *testing.T) {
	ev, err := Load(context.Background(), LoadOptions{}, "../formats/perfscript/testdata/notime/funcab-pid.txt")
	if err != nil {
		t.Fatal(err)
	}
	if ev.Profile(Perf) == nil || SampleCount(ev.Profile(CPU)) != 177 {
		t.Fatalf("perf %v, CPU samples %d, want 177", ev.Profile(Perf) != nil, SampleCount(ev.Profile(CPU)))
	}
	if note := ev.Files[0].Note; !strings.Contains(note, "no timestamps") || !strings.Contains(note, "no periods") {
		t.Errorf("note %q", note)
	}
	ev, err = Load(context.Background(), LoadOptions{PerfEvent: "page-faults"}, "../formats/perfscript/testdata/notime/multi-event-notime.txt")
	if err != nil {
		t.Fatal(err)
	}
	if n := SampleCount(ev.Profile(Perf)); n != 7 {
		t.Errorf("page-faults: %d samples, want 7", n)
	}
}
