package casebook

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/pprof/profile"
)

// Frame families, matched by prefix as perfdoctor's rules match them, that
// make a CPU sample the characteristic cost of the runtime and library cases.
var (
	rtSched = []string{ // SCHED001
		"runtime.schedule", "runtime.findRunnable", "runtime.findrunnable",
		"runtime.stealWork", "runtime.runqgrab", "runtime.wakep",
		"runtime.startm", "runtime.stopm",
	}
	rtJSON  = []string{"encoding/json."} // LIB003's encoding/json family
	rtChurn = []string{                  // SCHED002: goroutine creation and exit
		"runtime.newproc", "runtime.goexit0", "runtime.goexit1", "runtime.gdestroy",
		"runtime.gfget", "runtime.gfput", "runtime.malg",
	}
	// rtAsync is B1's "async work": everything the per-request goroutines
	// and the rate-limit store do, plus creating and ending them.
	rtAsync = append([]string{
		"github.com/perfdoctor/perfdoctor/casebook/b1churn.(*Handler).ServeHTTP.func",
		"github.com/perfdoctor/perfdoctor/casebook/b1churn.(*store).run",
		"github.com/perfdoctor/perfdoctor/casebook/b1churn.(*Handler).writer",
	}, rtChurn...)
	rtGC = []string{ // GC001
		"runtime.gcBgMarkWorker", "runtime.gcAssistAlloc", "runtime.gcDrain",
		"runtime.bgsweep", "runtime.sweepone", "runtime.(*sweepLocked).sweep",
		"runtime.deductSweepCredit", "runtime.(*mheap).reclaim",
		"runtime.gcStart", "runtime.gcMarkDone", "runtime.gcMarkTermination",
		"runtime.markroot", "runtime.scanobject", "runtime.scanObject", "runtime.scanSpan",
		"runtime.tryDeferToSpanScan", "runtime.scanstack", "runtime.greyobject",
		"runtime.gcmarknewobject", "runtime.wbBufFlush", "runtime.gcFlushBgCredit",
	}
	rtScan = []string{ // GC002: marking the live heap
		"runtime.scanobject", "runtime.scanObject", "runtime.scanSpan", "runtime.scanObjectsSmall",
		"runtime.scanObjectSmall", "runtime.spanSetScans", "runtime.tryDeferToSpanScan",
		"runtime.greyobject", "runtime.findObject", "runtime.markBits", "runtime.(*markBits)",
		"runtime.(*mspan).markBitsForIndex", "runtime.(*gcBits)", "runtime.(*spanInlineMarkBits)",
		"runtime.typePointers", "runtime.(*mspan).typePointersOf", "runtime.(*gcWork).tryGetSpan",
		"runtime.extractHeapBitsSmall", "runtime.heapBitsSmallForAddr", "runtime.spanOf",
	}
	rtZeroing = []string{"runtime.memclrNoHeapPointers", "runtime.mallocgcLarge"} // MEM001's CPU side
)

// sharesConcurrency is the end-to-end test's load: the shares measured
// here are the ones perfdoctor sees there.
const sharesConcurrency = 8

// rtCase is one variant's expectation: the share of its family, in percent.
type rtCase struct {
	caseName, variant string
	family            []string
	min, max          float64
}

// runtimeShareCases are the bounds quoted in README.md. B2's class is about
// bytes, not CPU: its check is TestAllocsPerCall.
var runtimeShareCases = []rtCase{
	{"a3", "bad", rtSched, 20, 100},
	{"a3", "fixed", rtSched, 0, 8}, // net/http's own idle and netpoll cost is ~5% here
	{"a4", "bad", rtJSON, 25, 100},
	{"a4", "fixed", rtJSON, 0, 3},
	{"b1", "bad", rtAsync, 25, 100},
	{"b1", "fixed", rtChurn, 0, 3},
	{"b4", "bad", rtJSON, 25, 100},
	{"b4", "fixed", rtJSON, 0, 3},
	{"b5", "bad", rtScan, 25, 100},
	{"b5", "fixed", rtScan, 0, 5},
	{"control", "bad", rtSched, 0, 8},
	{"control", "fixed", rtSched, 0, 8},
}

// TestCPUSharesRuntime is TestCPUShares for the runtime-class cases (A3, A4,
// B1, B4, B5 and the control). Opt-in:
//
//	PERFDOCTOR_CASEBOOK_PROFILE=1 go test -count=1 -run CPUSharesRuntime -v ./casebook/
//
// Select cases with -run 'CPUSharesRuntime/a3'. Each variant gets 8 s of load
// at sharesConcurrency; the 5 s profile covers 1.5 s .. 6.5 s of it. Set
// PERFDOCTOR_CASEBOOK_PROFILE_DIR to keep the profiles (CPU, then allocs,
// heap and goroutine right after it) for `go tool pprof`.
func TestCPUSharesRuntime(t *testing.T) {
	if os.Getenv("PERFDOCTOR_CASEBOOK_PROFILE") == "" {
		t.Skip("set PERFDOCTOR_CASEBOOK_PROFILE=1 to run (8 s of load per variant)")
	}
	for _, tc := range runtimeShareCases {
		t.Run(tc.caseName+"/"+tc.variant, func(t *testing.T) {
			prof, _ := rtProfileUnderLoad(t, tc.caseName, tc.variant)
			share := familyShare(prof, [][]string{tc.family})
			t.Logf("%s/%s: share %.1f%% (want %.0f..%.0f%%) of %s CPU; scheduler %.1f%%, GC %.1f%% (scan %.1f%%), churn %.1f%%, json %.1f%%",
				tc.caseName, tc.variant, share, tc.min, tc.max, cpuTime(prof),
				familyShare(prof, [][]string{rtSched}), familyShare(prof, [][]string{rtGC}), familyShare(prof, [][]string{rtScan}), familyShare(prof, [][]string{rtChurn}), familyShare(prof, [][]string{rtJSON}))
			if share < tc.min || share > tc.max {
				t.Errorf("share %.1f%% outside %.0f..%.0f%%", share, tc.min, tc.max)
			}
		})
	}
}

// TestAllocsPerCall checks B2 from the allocs profile under load, as
// perfdoctor's oversized-allocation rule reads it: bytes per allocation at
// the report slice's make, and that site's share of all bytes allocated.
func TestAllocsPerCall(t *testing.T) {
	if os.Getenv("PERFDOCTOR_CASEBOOK_PROFILE") == "" {
		t.Skip("set PERFDOCTOR_CASEBOOK_PROFILE=1 to run (8 s of load per variant)")
	}
	const site = "github.com/perfdoctor/perfdoctor/casebook/b2oversize.(*Handler).ServeHTTP"
	for _, tc := range []struct {
		variant          string
		minPer, maxPer   float64 // bytes per allocation at the site
		minShare, maxShr float64 // the site's share of allocated bytes, percent
	}{
		{"bad", 5 << 20, 6 << 20, 50, 100},
		{"fixed", 0, 16 << 10, 0, 100},
	} {
		t.Run("b2/"+tc.variant, func(t *testing.T) {
			prof, allocs := rtProfileUnderLoad(t, "b2", tc.variant)
			per, share := rtSiteAllocs(allocs, site)
			t.Logf("b2/%s: %.0f bytes per allocation at the report slice, %.1f%% of bytes allocated; CPU zeroing large objects %.1f%%, GC %.1f%% of %s",
				tc.variant, per, share, familyShare(prof, [][]string{rtZeroing}), familyShare(prof, [][]string{rtGC}), cpuTime(prof))
			if per < tc.minPer || per > tc.maxPer || share < tc.minShare || share > tc.maxShr {
				t.Errorf("%.0f bytes per call (want %.0f..%.0f), %.1f%% of bytes (want %.0f..%.0f%%)",
					per, tc.minPer, tc.maxPer, share, tc.minShare, tc.maxShr)
			}
		})
	}
}

// rtProfileUnderLoad is profileUnderLoad plus the allocs profile taken
// right after the CPU profile (allocs, heap and goroutine are saved too).
func rtProfileUnderLoad(t *testing.T, caseName, variant string) (cpu, allocs *profile.Profile) {
	t.Helper()
	cpu = profileUnderLoad(t, caseName, variant, sharesConcurrency, 1000, 0, func(p *variantProc) {
		for _, kind := range []string{"allocs", "heap", "goroutine"} {
			raw := fetch(t, p.pprofURL+"/debug/pprof/"+kind, 20*time.Second)
			saveProfile(t, caseName+"-"+variant+"-"+kind+".pb.gz", raw)
			if kind == "allocs" {
				var err error
				if allocs, err = profile.ParseData(raw); err != nil {
					t.Fatal(err)
				}
			}
		}
	})
	return cpu, allocs
}

// rtSiteAllocs returns, for fn's allocation site (the line in fn just above
// the runtime's frames) that allocates the most bytes, the bytes per
// allocation and its share of all bytes allocated, from an allocs profile.
func rtSiteAllocs(p *profile.Profile, fn string) (perAlloc, sharePct float64) {
	oi, si := -1, -1
	for i, st := range p.SampleType {
		switch st.Type {
		case "alloc_objects":
			oi = i
		case "alloc_space":
			si = i
		}
	}
	if oi < 0 || si < 0 {
		panic(fmt.Sprintf("not an allocs profile: %v", p.SampleType))
	}
	type site struct{ objs, bytes int64 }
	sites := map[int64]*site{}
	var all int64
	for _, s := range p.Sample {
		all += s.Value[si]
	stack:
		for _, loc := range s.Location {
			for _, ln := range loc.Line {
				if ln.Function == nil || strings.HasPrefix(ln.Function.Name, "runtime.") {
					continue
				}
				if ln.Function.Name == fn {
					st := sites[ln.Line]
					if st == nil {
						st = &site{}
						sites[ln.Line] = st
					}
					st.objs += s.Value[oi]
					st.bytes += s.Value[si]
				}
				break stack
			}
		}
	}
	var top site
	for _, st := range sites {
		if st.bytes > top.bytes {
			top = *st
		}
	}
	if top.objs == 0 || all == 0 {
		return 0, 0
	}
	return float64(top.bytes) / float64(top.objs), 100 * float64(top.bytes) / float64(all)
}
