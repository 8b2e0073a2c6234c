package export

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/pprof/profile"

	"github.com/perfdoctor/perfdoctor/evidence"
	"github.com/perfdoctor/perfdoctor/formats/folded"
)

// inputs are real recordings in each format perfdoctor reads.
var inputs = map[string]evidence.Kind{
	"../../formats/jfr/testdata/jdk17.jfr":                   evidence.CPU,
	"../../formats/perfscript/testdata/multi-event.txt":      evidence.Perf,
	"../../formats/folded/testdata/async.collapsed":          evidence.CPU,
	"../testdata/gperftools/heap.prof":                       evidence.Heap,
	"../../formats/jfr/testdata/ap-wall.jfr":                 evidence.Wall,
	"../../formats/perfscript/testdata/loopback-connect.txt": evidence.Perf,
}

func load(t *testing.T, path string, kind evidence.Kind) *profile.Profile {
	t.Helper()
	ev, err := evidence.Load(t.Context(), evidence.LoadOptions{}, path)
	if err != nil {
		t.Fatal(err)
	}
	p := ev.Profile(kind)
	if p == nil {
		t.Fatalf("%s: no %s profile", path, kind)
	}
	return p
}

// leafTotals sums a profile's values by leaf function.
func leafTotals(p *profile.Profile, idx int) map[string]int64 {
	out := map[string]int64{}
	for _, s := range p.Sample {
		if len(s.Location) == 0 || len(s.Location[0].Line) == 0 {
			continue
		}
		out[s.Location[0].Line[0].Function.Name] += s.Value[idx]
	}
	return out
}

func index(p *profile.Profile, typ string) int {
	for i, st := range p.SampleType {
		if st.Type == typ {
			return i
		}
	}
	return len(p.SampleType) - 1
}

// Folded stacks read back by the folded reader give the same samples per
// leaf function.
func TestFoldedRoundTrip(t *testing.T) {
	for path, kind := range inputs {
		p := load(t, path, kind)
		var buf bytes.Buffer
		if err := Folded(&buf, p, ""); err != nil {
			t.Fatal(err)
		}
		back, err := folded.ParseWith(bytes.NewReader(buf.Bytes()), folded.Options{Weights: folded.WeightsSamples})
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		want := leafTotals(p, index(p, "samples"))
		if kind == evidence.Heap {
			want = leafTotals(p, index(p, p.DefaultSampleType))
		}
		got := leafTotals(back.Profile, 0)
		for fn, n := range want {
			if n != 0 && got[fn] != n {
				t.Errorf("%s: leaf %q %d after the round trip, want %d", path, fn, got[fn], n)
				break
			}
		}
	}
}

// The pprof output is read by go tool pprof itself, which finds the same
// total.
func TestPprofReadByGoTool(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go tool")
	}
	p := load(t, "../../formats/jfr/testdata/jdk17.jfr", evidence.CPU)
	path := filepath.Join(t.TempDir(), "cpu.pb.gz")
	var buf bytes.Buffer
	if err := Write(&buf, "pprof", p, ""); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(path, buf.Bytes(), 0o644)
	out, err := exec.Command(goTool, "tool", "pprof", "-top", "-sample_index=samples", path).CombinedOutput()
	if err != nil {
		t.Fatalf("go tool pprof: %v\n%s", err, out)
	}
	var n int64
	for _, s := range p.Sample {
		n += s.Value[0]
	}
	if !strings.Contains(string(out), "Workload.spin") || !strings.Contains(string(out), fmt.Sprintf("100%% of %d total", n)) {
		t.Errorf("go tool pprof -top:\n%s", out)
	}
}

// Speedscope's document holds every sample with its weight, frames by
// index, root first.
func TestSpeedscope(t *testing.T) {
	p := load(t, "../../formats/perfscript/testdata/multi-event.txt", evidence.Perf)
	var buf bytes.Buffer
	if err := Speedscope(&buf, p, "cpu-clock"); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Schema string `json:"$schema"`
		Shared struct {
			Frames []struct{ Name string } `json:"frames"`
		} `json:"shared"`
		Profiles []struct {
			Type, Unit string
			EndValue   int64
			Samples    [][]int
			Weights    []int64
		} `json:"profiles"`
	}
	if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Profiles) != 1 || doc.Profiles[0].Type != "sampled" || doc.Profiles[0].Unit != "nanoseconds" {
		t.Fatalf("profiles %+v", doc.Profiles)
	}
	pr := doc.Profiles[0]
	var sum int64
	for i, s := range pr.Samples {
		sum += pr.Weights[i]
		for _, id := range s {
			if id < 0 || id >= len(doc.Shared.Frames) {
				t.Fatalf("frame index %d out of range", id)
			}
		}
	}
	var want int64
	for _, s := range p.Sample {
		want += s.Value[1]
	}
	if sum != want || pr.EndValue != want || len(pr.Samples) != len(pr.Weights) {
		t.Errorf("weights sum %d, end %d, want %d", sum, pr.EndValue, want)
	}
	if err := Write(&buf, "svg", p, ""); err == nil {
		t.Error("unknown format accepted")
	}
	if err := Write(&buf, "folded", p, "nope"); err == nil || !strings.Contains(err.Error(), "cpu-clock") {
		t.Errorf("unknown sample type: %v", err)
	}
}
