package gc002

import (
	"bytes"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/perfdoctor/perfdoctor/facts"

	"github.com/google/pprof/profile"

	"github.com/perfdoctor/perfdoctor/bundle"
	"github.com/perfdoctor/perfdoctor/evidence"
	"github.com/perfdoctor/perfdoctor/facts/frames"
	"github.com/perfdoctor/perfdoctor/internal/testprof"
	"github.com/perfdoctor/perfdoctor/rules"
	"github.com/perfdoctor/perfdoctor/rules/gc001"
)

// entries makes a live heap above the rule's 1M objects: each entry is a
// key string and a *user.
const entries = 640_000

// The heap profile estimates inuse_objects from samples: at the default
// rate (one per 512 KiB) the 1.28M objects read 0.97M to 1.60M over 30
// runs, under the rule's 1M one time in 30; one per 16 KiB reads 1.24M to
// 1.36M. The test measures the rule, not the sampler.
func init() { runtime.MemProfileRate = 16 << 10 }

type user struct {
	name  string
	next  *user
	score int64
}

var (
	byName map[string]*user // case B5's shape: every key and value is a scanned object
	byID   map[int64]int64  // the fix: no pointers, a few large noscan arrays
	sink   []byte
)

func loadByName() {
	byName = make(map[string]*user, entries)
	for i := range entries {
		k := "user:" + strconv.Itoa(i) + ":profile" // longer than 16 bytes: its own object
		byName[k] = &user{name: k, score: int64(i)}
	}
}

func loadByID() {
	byID = make(map[int64]int64, entries)
	for i := range entries {
		byID[int64(i)] = int64(i)
	}
}

// serve is the request path: lookups and a modest allocation.
func serve(lookup func(i int)) func() {
	i := 0
	return func() {
		for range 256 {
			lookup(i)
			i = (i + 7919) % entries
		}
		sink = make([]byte, 1024)
	}
}

func heapProfile(t *testing.T) *profile.Profile {
	t.Helper()
	runtime.GC()
	var buf bytes.Buffer
	if err := pprof.Lookup("heap").WriteTo(&buf, 0); err != nil {
		t.Fatal(err)
	}
	p, err := profile.Parse(&buf)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// profileService builds the live data, then profiles lookups against it
// with a tight GOGC, so cycles are frequent while allocation stays modest.
func profileService(t *testing.T, load func(), lookup func(int)) map[evidence.Kind]*profile.Profile {
	t.Helper()
	load()
	defer func() { byName, byID = nil, nil; runtime.GC() }()
	defer debug.SetGCPercent(debug.SetGCPercent(5))
	heap := heapProfile(t)
	cpu := testprof.CPU(t, 1200*time.Millisecond, 2, serve(lookup))
	return map[evidence.Kind]*profile.Profile{evidence.CPU: cpu, evidence.Heap: heap}
}

func TestFiresOnLargePointerRichHeap(t *testing.T) {
	keys := make([]string, 64)
	for i := range keys {
		keys[i] = "user:" + strconv.Itoa(i*1000) + ":profile"
	}
	profiles := profileService(t, loadByName, func(i int) { _ = byName[keys[i%len(keys)]] })
	res := rules.Run(facts.New(testprof.Evidence(profiles)), []*rules.Rule{Rule})
	if len(res.Findings) != 1 {
		cpu := evidence.NewStacks(profiles[evidence.CPU], "cpu")
		t.Fatalf("want one gc-scan-heavy-heap finding, got %d (scan %.3f, gc %.3f, not checked %v)",
			len(res.Findings), cpu.Share(frames.ScanFrames), cpu.Share(frames.GCFrames), res.NotChecked)
	}
	f := res.Findings[0]
	if f.Class != "gc-scan-heavy-heap" || f.Impact <= 0 || f.Resource != "cpu" {
		t.Errorf("finding %s impact %v resource %s", f.Class, f.Impact, f.Resource)
	}
	found := false
	for _, l := range f.Locations {
		found = found || strings.HasSuffix(l.Function, "gc002.loadByName")
	}
	if !found {
		t.Errorf("locations %+v do not name loadByName", f.Locations)
	}
	if !strings.Contains(f.Fix, "map[int64]int64") || !strings.Contains(f.Summary, "live heap of") {
		t.Errorf("summary %q fix %q", f.Summary, f.Fix)
	}
}

func TestSilentOnPointerFreeHeap(t *testing.T) {
	profiles := profileService(t, loadByID, func(i int) { _ = byID[int64(i)] })
	res := rules.Run(facts.New(testprof.Evidence(profiles)), []*rules.Rule{Rule})
	if len(res.Findings) != 0 {
		t.Fatalf("pointer-free heap got %+v", res.Findings[0])
	}
}

// heapOf is a synthetic heap profile with n live objects at one site.
func heapOf(n int64) *profile.Profile {
	fn := &profile.Function{ID: 1, Name: "main.(*Cache).Put", Filename: "/src/cache.go"}
	rt := &profile.Function{ID: 2, Name: "runtime.newobject", Filename: "malloc.go"}
	loc := &profile.Location{ID: 1, Line: []profile.Line{{Function: fn, Line: 42}}}
	rloc := &profile.Location{ID: 2, Line: []profile.Line{{Function: rt, Line: 1}}}
	return &profile.Profile{
		SampleType: []*profile.ValueType{
			{Type: "alloc_objects", Unit: "count"}, {Type: "alloc_space", Unit: "bytes"},
			{Type: "inuse_objects", Unit: "count"}, {Type: "inuse_space", Unit: "bytes"},
		},
		DefaultSampleType: "inuse_space",
		Function:          []*profile.Function{fn, rt},
		Location:          []*profile.Location{loc, rloc},
		Sample:            []*profile.Sample{{Location: []*profile.Location{rloc, loc}, Value: []int64{n, n * 48, n, n * 48}}},
	}
}

// TestThresholds runs GC001 and GC002 together on synthetic profiles: one
// GC cost must give one finding, GC002's when few cycles scan a large heap.
func TestThresholds(t *testing.T) {
	scanStack := []string{"runtime.scanObject", "runtime.gcDrain", "runtime.gcBgMarkWorker"}
	otherGC := []string{"runtime.bgsweep"}
	malloc := []string{"runtime.mallocgc", "main.handle"}
	for _, tc := range []struct {
		name               string
		scan, other, alloc int64 // percent of CPU
		live               int64
		cycles             float64 // GC cycles per second; 0 = unknown
		want               string  // the one GC finding's class
		severity           rules.Severity
	}{
		{"scan-heavy, big heap", 30, 5, 5, 3_000_000, 0, "gc-scan-heavy-heap", rules.High},
		{"scan-heavy, few cycles", 30, 5, 5, 3_000_000, 2, "gc-scan-heavy-heap", rules.High},
		{"medium", 12, 2, 3, 2_000_000, 1, "gc-scan-heavy-heap", rules.Medium},
		{"low", 6, 1, 2, 1_000_000, 0, "gc-scan-heavy-heap", rules.Low},
		{"frequent cycles over a big heap: headroom (GC001)", 30, 5, 5, 3_000_000, 20, "gc-pressure", rules.High},
		{"small live heap: allocation-driven (GC001)", 30, 5, 5, 200_000, 2, "gc-pressure", rules.High},
		{"allocator costs more than scanning", 10, 2, 15, 3_000_000, 2, "gc-pressure", rules.Low},
		{"scanning a minor part of GC", 6, 10, 1, 3_000_000, 2, "gc-pressure", rules.Low},
		{"too little scanning", 4, 0, 1, 3_000_000, 2, "", 0},
	} {
		cpu := testprof.Build(
			testprof.Stack{Value: tc.scan * 10, Funcs: scanStack},
			testprof.Stack{Value: tc.other * 10, Funcs: otherGC},
			testprof.Stack{Value: tc.alloc * 10, Funcs: malloc},
			testprof.Stack{Value: (100 - tc.scan - tc.other - tc.alloc) * 10, Funcs: []string{"main.handle"}},
		)
		ev := testprof.Evidence(map[evidence.Kind]*profile.Profile{evidence.CPU: cpu, evidence.Heap: heapOf(tc.live)})
		if tc.cycles > 0 {
			start := time.Unix(1_700_000_000, 0)
			ev.MetricsStart = &bundle.RuntimeStats{Time: start, NumGC: 100}
			ev.MetricsEnd = &bundle.RuntimeStats{Time: start.Add(10 * time.Second), NumGC: 100 + uint64(tc.cycles*10)}
		}
		res := rules.Run(facts.New(ev), []*rules.Rule{gc001.Rule, Rule})
		if tc.want == "" {
			if len(res.Findings) != 0 {
				t.Errorf("%s: want no finding, got %+v", tc.name, res.Findings)
			}
			continue
		}
		if len(res.Findings) != 1 {
			t.Errorf("%s: want one GC finding, got %d", tc.name, len(res.Findings))
			continue
		}
		f := res.Findings[0]
		if f.Class != tc.want || f.Severity != tc.severity {
			t.Errorf("%s: %s at %s, want %s at %s", tc.name, f.Class, f.Severity, tc.want, tc.severity)
		}
		if f.Class == "gc-scan-heavy-heap" && !strings.Contains(f.Summary, "(*Cache).Put (cache.go:42)") {
			t.Errorf("%s: summary %q", tc.name, f.Summary)
		}
	}
}

func TestNeedsHeapProfile(t *testing.T) {
	cpu := testprof.Build(testprof.Stack{Value: 1000, Funcs: []string{"runtime.scanObject"}})
	res := rules.Run(facts.New(testprof.Evidence(map[evidence.Kind]*profile.Profile{evidence.CPU: cpu})), []*rules.Rule{Rule})
	if len(res.NotChecked) != 1 || res.NotChecked[0].Missing[0] != rules.Heap {
		t.Fatalf("not checked %+v", res.NotChecked)
	}
}
