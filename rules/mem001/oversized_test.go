package mem001

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/perfdoctor/perfdoctor/facts"

	"github.com/google/pprof/profile"

	"github.com/perfdoctor/perfdoctor/bundle"
	"github.com/perfdoctor/perfdoctor/evidence"
	"github.com/perfdoctor/perfdoctor/internal/testprof"
	"github.com/perfdoctor/perfdoctor/rules"
)

type report struct {
	id    int64
	name  string
	score float64
}

const maxLiveStreamers = 100_000 // the worst case, sized per request: ~3 MiB

var (
	sinkReports []report
	sinkStrings []string
)

// ordinary is the rest of a request: a few small allocations.
func ordinary(i int) {
	sinkStrings = sinkStrings[:0]
	for j := range 16 {
		sinkStrings = append(sinkStrings, strconv.Itoa(i*j))
	}
}

// handleOversized is case B2: a report slice made for the maximum number
// of live streamers on every request, while a request holds a handful.
func handleOversized(i int) {
	reports := make([]report, maxLiveStreamers)
	for j := range 5 {
		reports[j] = report{id: int64(j), score: float64(i)}
	}
	sinkReports = reports
	ordinary(i)
}

func handleRightSized(i int) {
	reports := make([]report, 0, 5)
	for j := range 5 {
		reports = append(reports, report{id: int64(j), score: float64(i)})
	}
	sinkReports = reports
	ordinary(i)
}

// allocsDuring returns the allocations made by n calls of handle only, as a
// delta of the process's cumulative allocs profile.
func allocsDuring(t *testing.T, n int, handle func(int)) *profile.Profile {
	t.Helper()
	base := testprof.Allocs(t, 0, func() {})
	i := 0
	after := testprof.Allocs(t, n, func() { handle(i); i++ })
	base.Scale(-1)
	p, err := profile.Merge([]*profile.Profile{after, base})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestFiresOnOversizedSlicePerRequest(t *testing.T) {
	allocs := allocsDuring(t, 100, handleOversized)
	res := rules.Run(facts.New(testprof.Evidence(map[evidence.Kind]*profile.Profile{evidence.Allocs: allocs})), []*rules.Rule{Rule})
	if len(res.Findings) != 1 {
		space := evidence.NewStacks(allocs, "alloc_space")
		sites, typical := bySite(objectCounts(allocs), space)
		for _, s := range sites[:min(3, len(sites))] {
			t.Logf("site %s:%d: %d objects, %d bytes of %d; typical %v", s.frame.Func, s.frame.Line, s.objects, s.bytes, space.Total, typical)
		}
		t.Fatalf("want one oversized-allocation finding, got %d", len(res.Findings))
	}
	f := res.Findings[0]
	if f.Class != "oversized-allocation" || f.Resource != "memory" || f.Severity != rules.High {
		t.Errorf("finding %s %s %s", f.Class, f.Resource, f.Severity)
	}
	loc := f.Locations[0]
	if !strings.HasSuffix(loc.Function, "mem001.handleOversized") || !strings.HasSuffix(loc.File, "oversized_test.go") || loc.Line == 0 {
		t.Errorf("site %+v, want handleOversized in oversized_test.go", loc)
	}
	per := f.Evidence[0].Num
	// The allocs profile samples by bytes, so the per-call figure is an
	// estimate: within a factor of two of the truth is what matters here.
	if want := float64(maxLiveStreamers) * 32; per < want/2 || per > want*2 {
		t.Errorf("bytes per allocation %v, want ~%v", per, want)
	}
	if f.Impact < 0.9 || !strings.Contains(f.Summary, "oversized_test.go:") || !strings.Contains(f.Fix, "make([]T, 0, n)") {
		t.Errorf("impact %v, summary %q, fix %q", f.Impact, f.Summary, f.Fix)
	}
}

func TestSilentOnRightSizedSlice(t *testing.T) {
	allocs := allocsDuring(t, 100, handleRightSized)
	res := rules.Run(facts.New(testprof.Evidence(map[evidence.Kind]*profile.Profile{evidence.Allocs: allocs})), []*rules.Rule{Rule})
	if len(res.Findings) != 0 {
		t.Fatalf("right-sized slices got %+v", res.Findings[0])
	}
}

// allocsProfile builds an allocs profile: each stack allocates Value
// objects of the given size.
type alloc struct {
	objects, size int64
	funcs         []string
}

func allocsProfile(allocs ...alloc) *profile.Profile {
	p := &profile.Profile{
		SampleType: []*profile.ValueType{
			{Type: "alloc_objects", Unit: "count"}, {Type: "alloc_space", Unit: "bytes"},
			{Type: "inuse_objects", Unit: "count"}, {Type: "inuse_space", Unit: "bytes"},
		},
		DefaultSampleType: "alloc_space",
		PeriodType:        &profile.ValueType{Type: "space", Unit: "bytes"},
		Period:            512 * 1024,
	}
	locs := map[string]*profile.Location{}
	for _, a := range allocs {
		var sl []*profile.Location
		for _, name := range a.funcs {
			loc := locs[name]
			if loc == nil {
				fn := &profile.Function{ID: uint64(len(locs) + 1), Name: name, Filename: "/src/app/handler.go"}
				loc = &profile.Location{ID: uint64(len(locs) + 1), Line: []profile.Line{{Function: fn, Line: int64(100 + len(name))}}}
				locs[name] = loc
				p.Function = append(p.Function, fn)
				p.Location = append(p.Location, loc)
			}
			sl = append(sl, loc)
		}
		p.Sample = append(p.Sample, &profile.Sample{Location: sl, Value: []int64{a.objects, a.objects * a.size, 0, 0}})
	}
	return p
}

func TestThresholds(t *testing.T) {
	const mib = 1 << 20
	ordinary := alloc{objects: 1_000_000, size: 48, funcs: []string{"runtime.mallocgc", "main.decode", "main.handler"}}
	for _, tc := range []struct {
		name  string
		big   alloc
		fires bool
		want  rules.Severity
	}{
		// 48 MB of 96 MB total: 50%.
		{"half the bytes at 1 MiB per call", alloc{48, mib, []string{"runtime.mallocgc", "runtime.makeslice", "main.report"}}, true, rules.High},
		// 12 MiB of ~60 MB: 21%.
		{"a fifth of the bytes", alloc{12, mib, []string{"runtime.makeslice", "main.report"}}, true, rules.Low},
		// 4 MiB of ~52 MB: 8%: below the share threshold.
		{"a small share", alloc{4, mib, []string{"runtime.makeslice", "main.report"}}, false, 0},
		// 32 KiB per call is an ordinary buffer, whatever its share.
		{"32 KiB buffers", alloc{3000, 32 << 10, []string{"runtime.makeslice", "main.copyBody"}}, false, 0},
		// Growth inside the standard library is not this rule's to judge.
		{"io.ReadAll growth", alloc{60, mib, []string{"runtime.growslice", "io.ReadAll", "main.handler"}}, false, 0},
	} {
		res := rules.Run(facts.New(testprof.Evidence(map[evidence.Kind]*profile.Profile{evidence.Allocs: allocsProfile(ordinary, tc.big)})), []*rules.Rule{Rule})
		if got := len(res.Findings) == 1; got != tc.fires {
			t.Errorf("%s: fired=%v (%d findings), want %v", tc.name, got, len(res.Findings), tc.fires)
			continue
		}
		if tc.fires && res.Findings[0].Severity != tc.want {
			t.Errorf("%s: severity %s, want %s", tc.name, res.Findings[0].Severity, tc.want)
		}
	}
}

func TestUsesHeapAndRuntimeStatistics(t *testing.T) {
	const mib = 1 << 20
	allocs := allocsProfile(
		alloc{1_000_000, 48, []string{"runtime.mallocgc", "main.decode"}},
		alloc{100, 4 * mib, []string{"runtime.makeslice", "main.report", "main.handler"}},
	)
	heap := allocsProfile(alloc{3, 4 * mib, []string{"runtime.makeslice", "main.report", "main.handler"}})
	heap.DefaultSampleType = "inuse_space"
	for _, s := range heap.Sample {
		s.Value[2], s.Value[3] = s.Value[0], s.Value[1]
	}
	ev := testprof.Evidence(map[evidence.Kind]*profile.Profile{evidence.Allocs: allocs, evidence.Heap: heap})
	t0 := time.Unix(1000, 0)
	ev.MetricsStart = &bundle.RuntimeStats{Time: t0}
	ev.MetricsEnd = &bundle.RuntimeStats{Time: t0.Add(10 * time.Second), TotalAlloc: 10 << 30}
	res := rules.Run(facts.New(ev), []*rules.Rule{Rule})
	if len(res.Findings) != 1 {
		t.Fatal("no finding")
	}
	f := res.Findings[0]
	facts := map[string]float64{}
	for _, e := range f.Evidence {
		facts[e.Name] = e.Num
	}
	if facts["still live at the site (heap profile)"] != 12*mib {
		t.Errorf("live at site = %v", facts["still live at the site (heap profile)"])
	}
	if r := facts["allocation rate at the site"]; r < 0.85*(1<<30) || r > 0.95*(1<<30) {
		t.Errorf("site rate = %v, want ~0.9 GiB/s", r)
	}
	if len(f.Locations) != 2 || f.Locations[1].Function != "main.handler" {
		t.Errorf("locations %+v, want the site and its caller", f.Locations)
	}
}
