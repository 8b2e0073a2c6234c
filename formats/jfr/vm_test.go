package jfr

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// vmFixtures are the JVM rules' recordings (rules/testdata/jvm/record.sh):
// cut down by jfr scrub, which writes the metadata last in the chunk, and
// holding the VM's own events the rules read.
// Two of them, from JDK 25, are cross-checked with the JDK's reader (each
// jfr print takes seconds): between them, every VM event's fields
// (jdk.CodeCacheFull has jdk.CodeCacheStatistics' fields, and
// jdk.EvacuationFailed is counted). JDK 17's are in jdk17.jfr, which
// TestNativeMatchesJDKReader cross-checks.
var vmFixtures = []string{"safepoints-jdk25.jfr", "allocstall-zgc-jdk25.jfr"}

func vmFixture(name string) string {
	return filepath.Join("..", "..", "rules", "testdata", "jvm", name)
}

// The native reader and the JDK's agree on the VM's events too.
func TestNativeMatchesJDKReaderOnVMEvents(t *testing.T) {
	tool := needTool(t)
	for _, name := range vmFixtures {
		t.Run(name, func(t *testing.T) {
			native, err := ReadFile(vmFixture(name))
			if err != nil {
				t.Fatal(err)
			}
			jdk, err := ConvertWith(context.Background(), tool, vmFixture(name))
			if err != nil {
				t.Fatal(err)
			}
			native.Wall, native.JVM.End = nil, jdk.JVM.End
			if a, b := render(native), render(jdk); a != b {
				t.Errorf("native and JDK readings differ:\n%s", firstDiff(a, b))
			}
		})
	}
}

// Each fixture holds what its program did.
func TestVMFixtures(t *testing.T) {
	read := func(name string) *Summary {
		rec, err := ReadFile(vmFixture(name))
		if err != nil {
			t.Fatal(err)
		}
		return rec.JVM
	}
	sp := read("safepoints-jdk17.jfr")
	if vm := sp.VM; vm.Safepoints == 0 || vm.TimeToSafepointMax < 100*time.Millisecond || vm.CountedLoopSafepoints || !vm.FlagsRecorded ||
		len(vm.SlowSafepointSites) == 0 || sp.GC.CPUCollections == 0 || sp.JDK() != 17 {
		t.Errorf("safepoints: %+v, GC %+v, JDK %d", vm, sp.GC, sp.JDK())
	}
	var dumps *VMOperation
	for i, op := range sp.VM.Operations {
		if op.Name == "ThreadDump" {
			dumps = &sp.VM.Operations[i]
		}
	}
	if dumps == nil || !dumps.AtSafepoint || dumps.Count < 10 || dumps.Callers[0] != "watchdog" || dumps.TimeToSafepoint <= dumps.Total {
		t.Errorf("thread dumps %+v", dumps)
	}
	// With jdk.SafepointLatency, the late thread's own stack names the loop.
	if sites := read("safepoints-jdk25.jfr").VM.SlowSafepointSites; len(sites) == 0 || sites[0].Function != "Safepoints.checksum" || sites[0].Time < 100*time.Millisecond {
		t.Errorf("safepoint latency sites %+v", sites)
	}
	st := read("allocstall-zgc-jdk25.jfr")
	if s := st.VM.AllocationStalls; s.Count == 0 || s.Stalled > s.Total || s.Stalled <= 0 || len(s.Sites) == 0 || s.Sites[0].Function != "AllocStall.render" || st.GC.Concurrent == 0 || st.JDK() != 25 {
		t.Errorf("stalls %+v, concurrent %s", s, st.GC.Concurrent)
	}
	cc := read("codecache-jdk25.jfr").VM
	if cc.CodeCacheFull == 0 || len(cc.CodeCache) == 0 || cc.Stacks.Interpreted == 0 {
		t.Errorf("code cache %+v", cc)
	}
	if vm := read("gcheavy-jdk17.jfr").VM; vm.EvacuationFailures == 0 {
		t.Errorf("evacuation failures %d", vm.EvacuationFailures)
	}
	if vm := read("deepstacks-jdk25.jfr").VM; vm.Stacks.MaxDepth != 64 || vm.Stacks.Truncated < vm.Stacks.Samples*9/10 || !vm.DebugNonSafepoints {
		t.Errorf("deep stacks %+v", vm)
	}
}

// checkVM holds for any input: no negative time, stalls' union within
// their sum, code heaps used between none and all.
func checkVM(t *testing.T, s *Summary) {
	t.Helper()
	vm := s.VM
	st := vm.AllocationStalls
	if vm.TimeToSafepoint < 0 || vm.TimeToSafepointMax > vm.TimeToSafepoint || st.Total < 0 || st.Stalled < 0 || st.Stalled > st.Total ||
		s.GC.CPU < 0 || s.GC.Concurrent < 0 || len(st.Sites) > 8 || len(vm.SlowSafepointSites) > 8 {
		t.Fatalf("VM summary out of bounds: %+v, GC %+v", vm, s.GC)
	}
	for _, op := range vm.Operations {
		if op.Total < 0 || op.Max > op.Total || op.Count <= 0 || len(op.Callers) > 4 {
			t.Fatalf("operation %+v", op)
		}
	}
	for _, h := range vm.CodeCache {
		if u := h.Used(); u < 0 || u > 1 {
			t.Fatalf("code heap %+v used %f", h, u)
		}
	}
}

// The JSON path (jfr print --json) reads the VM's events as the native one.
func TestParseVMEvents(t *testing.T) {
	f, err := os.Open("testdata/vm.json")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rec, err := Parse(f)
	if err != nil {
		t.Fatal(err)
	}
	s := rec.JVM
	checkVM(t, s)
	vm := s.VM
	if vm.Safepoints != 3 || vm.TimeToSafepoint <= 0 || len(vm.Operations) == 0 || vm.AllocationStalls.Count != 3 ||
		vm.AllocationStalls.Sites[0].Function != "AllocStall.render" || vm.EvacuationFailures != 3 || vm.CodeCacheFull != 1 ||
		s.GC.CPUCollections != 3 || s.GC.Concurrent <= 0 || !vm.FlagsRecorded || vm.Stacks.Samples != 3 {
		t.Errorf("%+v\nGC %+v", vm, s.GC)
	}
}

func TestUnion(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(a, b int) span {
		return span{t0.Add(time.Duration(a) * time.Millisecond), t0.Add(time.Duration(b) * time.Millisecond)}
	}
	for _, c := range []struct {
		spans []span
		want  time.Duration
	}{
		{nil, 0},
		{[]span{at(0, 10)}, 10 * time.Millisecond},
		{[]span{at(5, 20), at(0, 10), at(30, 40)}, 30 * time.Millisecond},
		{[]span{at(0, 100), at(10, 20)}, 100 * time.Millisecond},
	} {
		if got := union(c.spans); got != c.want {
			t.Errorf("%v: %s, want %s", c.spans, got, c.want)
		}
	}
}

func TestJDK(t *testing.T) {
	for v, want := range map[string]int{
		"OpenJDK 64-Bit Server VM (25.0.3+9-LTS) for linux-amd64 JRE (25.0.3+9-LTS)":                  25,
		"OpenJDK 64-Bit Server VM (17.0.15+6-Debian-1deb12u1) for linux-amd64 JRE (17.0.15+6-Debian)": 17,
		"OpenJDK 64-Bit Server VM (21+35) for linux-amd64":                                            21,
		"Java HotSpot(TM) 64-Bit Server VM (25.392-b08) for linux-amd64 JRE (1.8.0_392-b08)":          8, // JDK 8's VM is numbered 25
		"OpenJDK 64-Bit Server VM (21+35)":                                                            21,
		"":                                                                                            0,
	} {
		if got := (&Summary{JVMVersion: v}).JDK(); got != want {
			t.Errorf("%q: %d, want %d", v, got, want)
		}
	}
}
