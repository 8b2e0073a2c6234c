// Package mem001 detects call sites that allocate far more bytes per
// call than the rest of the program, such as a slice made with a maximum
// length on every request (finding class oversized-allocation).
package mem001

import (
	"fmt"
	"sort"

	"github.com/perfdoctor/perfdoctor/facts"

	"github.com/google/pprof/profile"

	"github.com/perfdoctor/perfdoctor/evidence"
	"github.com/perfdoctor/perfdoctor/internal/human"
	"github.com/perfdoctor/perfdoctor/rules"
)

// Rule is MEM001.
var Rule = &rules.Rule{
	ID:    "MEM001",
	Class: "oversized-allocation",
	Doc: rules.Doc{
		Title: "A call site allocates far more bytes per call than the program's typical allocation",
		Text: `A make([]T, hugeLen) or a buffer sized for the worst case on every call
allocates, zeroes and then collects memory that is mostly never used. The
bytes count toward the GC's heap goal, so the collector runs more often, and
when several calls overlap the heap (and RSS) balloons: in one service a report
slice sized for the maximum number of live streamers, made per request, drove
RSS past 5 GB at 500 requests per second.`,
		Evidence: `The allocs profile: per allocation site (the first frame outside the runtime,
which must be the application's code, not the standard library growing a
buffer), alloc_space divided by alloc_objects is the bytes per allocation.
Reports a site that allocates at least 64 KiB per call, at least 64 times the
program's typical (median) allocation, and at least 10% of all allocated
bytes: low; 25% medium; 50% high. The heap profile shows how much of it is
live; runtime statistics give the site's allocation rate.`,
		Fix: `Size the allocation from the actual need: make([]T, 0, n) with n the number
of elements this call will hold (or a small estimate) and let append grow it.
If the call really needs a large buffer every time, reuse it (a per-worker
buffer, or a sync.Pool of *[]byte) or stream instead of materialising.`,
		Before: `reports := make([]Report, maxLiveStreamers)       // per request, mostly empty`,
		After:  `reports := make([]Report, 0, len(activeStreamers)) // what this request holds`,
		Caveats: `The profile cannot tell how much of an allocation is used. If the size is
the real need (a large payload read whole), the fix is reuse or streaming, not
a smaller size. Growth inside library code (io.ReadAll, bytes.Buffer) is not
judged here.`,
		Since: "0.1",
		Refs:  []string{"https://go.dev/doc/gc-guide"},
	},
	Needs: []rules.Input{rules.Allocs},
	Uses:  []rules.Input{rules.Heap, rules.Metrics, rules.CPU},
	Facts: []facts.Key{facts.AllocStacks, facts.CPUStacks, facts.WindowAllocs},
	Check: check,
}

const (
	minBytesPerAlloc = 64 << 10 // above the 32 KiB size classes: a large object, zeroed per call
	minTimesTypical  = 64
	lowShare         = 0.10
	mediumShare      = 0.25
	highShare        = 0.50
	maxFindings      = 3
)

// ZeroingFrames is the CPU spent clearing fresh large allocations.
var ZeroingFrames = evidence.FuncPrefix("runtime.memclrNoHeapPointers", "runtime.mallocgcLarge")

type site struct {
	frame          evidence.Frame
	caller         *evidence.Frame
	objects, bytes int64
}

func (s *site) perAlloc() float64 { return float64(s.bytes) / float64(s.objects) }

func check(pass *rules.Pass) error {
	ev := pass.Evidence
	p := facts.Get(pass.Facts, facts.WindowAllocs).Profile
	space := evidence.NewStacks(p, "alloc_space")
	objs := objectCounts(p)
	if space == nil || space.Total == 0 || len(objs) != len(space.Samples) {
		return nil
	}
	sites, typical := bySite(objs, space)
	var found []*site
	for _, s := range sites {
		share := float64(s.bytes) / float64(space.Total)
		if share < lowShare {
			break // sites are sorted by bytes
		}
		if s.perAlloc() >= minBytesPerAlloc && s.perAlloc() >= minTimesTypical*typical && rules.IsApplication(s.frame.Func) {
			found = append(found, s)
		}
		if len(found) == maxFindings {
			break
		}
	}
	if len(found) == 0 {
		return nil
	}
	inuse := liveBySite(ev)
	gc, haveGC := ev.GC()
	zeroing := 0.0
	if pass.Has(rules.CPU) {
		zeroing = facts.Get(pass.Facts, facts.CPUStacks).Share(ZeroingFrames)
	}
	for _, s := range found {
		share := float64(s.bytes) / float64(space.Total)
		per := uint64(s.perAlloc())
		name := rules.SiteName(s.frame)
		f := rules.Finding{
			Severity:    rules.Grade(share, mediumShare, highShare),
			Impact:      share,
			Resource:    "memory",
			ImpactBasis: "share of all bytes allocated in the window that come from this site; sizing it to what each call uses recovers most of them (an upper bound: the profile does not show how much is used)",
			Summary: fmt.Sprintf("%s allocates %s per call, %s of all bytes allocated (typical allocation %s)",
				name, human.Bytes(per), human.Percent(share), human.Bytes(uint64(typical))),
			Evidence: []rules.Fact{
				rules.Bytes("bytes per allocation at the site", per),
				rules.Share("share of allocated bytes", share),
				rules.Bytes("typical allocation in the program (median by count)", uint64(typical)),
				rules.Count("allocations at the site (estimated)", float64(s.objects), ""),
				rules.Bytes("allocated at the site", uint64(s.bytes)),
			},
			Locations: []rules.Location{{Function: s.frame.Func, File: s.frame.File, Line: s.frame.Line, Share: share, Role: "allocation site"}},
			Fix: fmt.Sprintf("Size the allocation at %s from what the call actually holds: make([]T, 0, n) with n the elements this call will use (or a small estimate) and let append grow it, instead of %s every call. If every call truly needs that much, reuse one buffer per worker or a sync.Pool of *[]byte, or stream the data.",
				name, human.Bytes(per)),
			Example: "before: buf := make([]T, maxItems)        // " + human.Bytes(per) + " per call\nafter:  buf := make([]T, 0, len(items))  // what this call holds",
		}
		if s.caller != nil {
			f.Locations = append(f.Locations, rules.Location{Function: s.caller.Func, File: s.caller.File, Line: s.caller.Line, Share: share, Role: "caller"})
		}
		if live, ok := inuse[key{s.frame.Func, s.frame.Line}]; ok && live > 0 {
			f.Evidence = append(f.Evidence, rules.Bytes("still live at the site (heap profile)", uint64(live)))
		}
		if haveGC && gc.AllocBytesSec > 0 {
			rate := rules.Bytes("allocation rate at the site", uint64(share*gc.AllocBytesSec))
			rate.Value += "/s"
			rate.Unit += "/s"
			f.Evidence = append(f.Evidence, rate)
		}
		if zeroing >= 0.01 {
			f.Evidence = append(f.Evidence, rules.Share("CPU zeroing large allocations (all sites)", zeroing))
		}
		if !pass.Has(rules.Heap) {
			f.Caveats = append(f.Caveats, "No heap profile: how much of it stays live is unknown.")
		}
		site := s.frame
		f.Claim = &rules.Claim{Level: rules.LevelCode, Allocs: facts.Get(pass.Facts, facts.AllocStacks).Has(func(fn string) bool { return fn == site.Func })}
		pass.Report(f)
	}
	return nil
}

type key struct {
	fn   string
	line int64
}

// bySite totals objects and bytes per allocation site (the first frame
// above the runtime, by function and line), largest byte totals first, and
// returns the program's median bytes per object weighted by object count.
func bySite(objs []int64, space *evidence.Stacks) ([]*site, float64) {
	pick := space.First(func(fn string) bool { return !evidence.IsRuntime(fn) })
	acc := map[key]*site{}
	type size struct {
		per     float64
		objects int64
	}
	var sizes []size
	var allObjects int64
	for i, sm := range space.Samples {
		n := objs[i]
		if n <= 0 {
			continue
		}
		sizes = append(sizes, size{float64(sm.Value) / float64(n), n})
		allObjects += n
		f := pick(sm)
		if f == nil {
			continue
		}
		k := key{f.Func, f.Line}
		s := acc[k]
		if s == nil {
			s = &site{frame: *f, caller: callerOf(space, sm, f)}
			acc[k] = s
		}
		s.objects += n
		s.bytes += sm.Value
	}
	out := make([]*site, 0, len(acc))
	for _, s := range acc {
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].bytes != out[j].bytes {
			return out[i].bytes > out[j].bytes
		}
		return out[i].frame.Func < out[j].frame.Func
	})
	sort.Slice(sizes, func(i, j int) bool { return sizes[i].per < sizes[j].per })
	var seen int64
	typical := 0.0
	for _, s := range sizes {
		seen += s.objects
		if seen*2 >= allObjects {
			typical = s.per
			break
		}
	}
	return out, typical
}

// objectCounts lists alloc_objects for the samples NewStacks keeps for
// alloc_space (those with a non-zero value), in the same order.
func objectCounts(p *profile.Profile) []int64 {
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
		return nil
	}
	var out []int64
	for _, s := range p.Sample {
		if s.Value[si] != 0 {
			out = append(out, s.Value[oi])
		}
	}
	return out
}

// callerOf is the frame above the site in the sample's stack.
func callerOf(st *evidence.Stacks, sm evidence.Sample, site *evidence.Frame) *evidence.Frame {
	for i, id := range sm.Frames {
		if &st.Frames[id] == site && i+1 < len(sm.Frames) {
			return &st.Frames[sm.Frames[i+1]]
		}
	}
	return nil
}

// liveBySite is the heap profile's in-use bytes by the same site key.
func liveBySite(ev *evidence.Evidence) map[key]int64 {
	st := evidence.NewStacks(ev.Profile(evidence.Heap), "inuse_space")
	if st == nil {
		return nil
	}
	pick := st.First(func(fn string) bool { return !evidence.IsRuntime(fn) })
	out := map[key]int64{}
	for _, sm := range st.Samples {
		if f := pick(sm); f != nil {
			out[key{f.Func, f.Line}] += sm.Value
		}
	}
	return out
}
