// Package gc002 detects garbage-collector mark work dominated by
// scanning a large, pointer-rich live heap (finding class
// gc-scan-heavy-heap).
package gc002

import (
	"fmt"
	"strings"

	"github.com/perfdoctor/perfdoctor/facts"

	"github.com/perfdoctor/perfdoctor/bundle"
	"github.com/perfdoctor/perfdoctor/evidence"
	"github.com/perfdoctor/perfdoctor/facts/frames"
	"github.com/perfdoctor/perfdoctor/internal/human"
	"github.com/perfdoctor/perfdoctor/rules"
	"github.com/perfdoctor/perfdoctor/rules/goruntime"
)

// Rule is GC002.
var Rule = &rules.Rule{
	ID:    "GC002",
	Class: "gc-scan-heavy-heap",
	Doc: rules.Doc{
		Title: "The collector spends its time scanning a large, pointer-rich live heap",
		Text: `Every GC cycle marks the whole live heap: it visits each live object that can
hold pointers and follows them. A heap of millions of small, long-lived objects
(a map[string]*T cache, a tree of nodes, slices of pointers) makes each cycle
expensive even when the service allocates little, so the GC's CPU follows the
size and shape of what is kept, not the allocation rate. Objects without
pointers (map[int64]int64, []struct{ a, b int64 }, []byte) are not scanned.`,
		Evidence: `CPU share of samples in heap scanning (runtime.scanobject, and Go 1.26's
scanObject, scanSpan and scanObjectsSmall, greyobject, findObject, mark bits),
against the GC share (GC001's frames) and the allocator's share
(runtime.mallocgc outside GC); the heap profile's inuse_objects and its top
sites; the GC cycle rate. Reports when scanning takes at least 5% of CPU and
at least half of the GC's CPU, the live heap holds at least 1M objects, the
allocator costs less CPU than scanning, and the GC runs at most 5 cycles a
second (otherwise the allocation rate is the lever: GC001). Severity by scan
share: 5% low, 10% medium, 20% high.`,
		Fix: `Make the long-lived data pointer-free or fewer objects: key maps by integers
(map[int64]int64 instead of map[string]int64 or map[string]*T; intern strings
to IDs), store values inline (map[K]T, []T indexed by int, instead of *T), keep
large caches in byte arenas (the bigcache/freecache design: one []byte plus a
map[uint64]uint32 of offsets). Then give the GC headroom with GOMEMLIMIT and a
higher GOGC, so the remaining scan runs less often.`,
		Before: `cache := map[string]*Entry{}          // millions of keys and *Entry: all scanned`,
		After:  `cache := map[uint64]Entry{}           // hashed key, inline value without pointers`,
		Caveats: `A value type that still holds a pointer (a string, a slice) is still
scanned; pointer-free means no strings, slices, maps or pointers inside.
GC CPU is cycles per second × cost per cycle. This rule reports when the cost
per cycle is what is out of line (few cycles a second over millions of
objects); when cycles are frequent GC001 (gc-pressure) reports the same CPU
instead, since headroom is then the cheaper fix. The two fixes compound.`,
		Since: "0.1",
		Refs:  []string{"https://go.dev/doc/gc-guide"},
	},
	Needs: []rules.Input{rules.CPU, rules.Heap},
	Uses:  []rules.Input{rules.Metrics, rules.Allocs},
	Facts: []facts.Key{facts.CPUStacks, facts.GCCost},
	Check: check,
}

const (
	// High from 20%, the catalog's common "worth a change today" line:
	// Go 1.27's collector scans casebook B5's 2.6M-object heap in 22% of
	// CPU where Go 1.26 took 34%, and that is still the service's top cost.
	mediumShare = 0.10
	highShare   = 0.20
	topSites    = 5
)

func check(pass *rules.Pass) error {
	ev := pass.Evidence
	if !pass.EnoughCPU() {
		return nil
	}
	c := facts.Get(pass.Facts, facts.GCCost)
	bound := c.HeapScanBound
	if !bound {
		return nil
	}
	cpu := facts.Get(pass.Facts, facts.CPUStacks)
	heapObjs := evidence.NewStacks(ev.Profile(evidence.Heap), "inuse_objects")
	live := c.LiveObjects
	sites := heapObjs.TopSites(topSites, heapObjs.First(func(fn string) bool { return !evidence.IsRuntime(fn) }))
	top := 0.5 // no site outside the runtime: assume half the objects can go
	if len(sites) > 0 {
		top = 0
		for _, s := range sites[:min(3, len(sites))] {
			top += s.Flat
		}
	}

	f := rules.Finding{
		Severity: rules.Grade(c.Scan, mediumShare, highShare),
		Impact:   c.Scan * top,
		Resource: "cpu",
		ImpactBasis: "CPU share of heap scanning × the share of live objects held by the top 3 sites: " +
			"a pointer-free layout there takes their objects out of every cycle's mark",
		Evidence: []rules.Fact{
			rules.Share("heap scanning share of CPU", c.Scan),
			rules.Share("GC share of CPU", c.GC),
			rules.Share("allocation share of CPU (outside GC)", c.Malloc),
			rules.Count("live heap objects", float64(live), ""),
		},
		Frames:    cpu.Matched(frames.ScanFrames, 10),
		Locations: rules.Locations(sites, "holds live objects (share of inuse_objects)"),
	}
	if c.LiveBytes > 0 {
		f.Evidence = append(f.Evidence,
			rules.Bytes("live heap", uint64(c.LiveBytes)),
			rules.Bytes("mean live object size", uint64(c.LiveBytes/live)))
	}
	if c.CyclesPerSec > 0 {
		f.Evidence = append(f.Evidence, rules.Count("GC cycles per second", round2(c.CyclesPerSec), "/s"))
	}
	if gc, ok := ev.GC(); ok && gc.AllocObjsSec > 0 {
		f.Evidence = append(f.Evidence, rules.Count("objects allocated per second per live object", round2(gc.AllocObjsSec/float64(live)), "/s"))
	}

	holder := "the live heap"
	if len(sites) > 0 {
		holder = rules.SiteName(sites[0].Frame)
	}
	cycles := ""
	if c.CyclesPerSec > 0 {
		cycles = fmt.Sprintf(" in %.1f GC cycles/s", c.CyclesPerSec)
	}
	f.Summary = fmt.Sprintf("The GC spends %s of CPU scanning a live heap of %s objects%s; %s holds %s of them",
		human.Percent(c.Scan), human.Number(float64(live)), cycles, holder, human.Percent(firstFlat(sites)))

	var fix strings.Builder
	if len(sites) > 0 {
		fmt.Fprintf(&fix, "The live objects are allocated at %s. ", rules.SiteList(sites, 3))
	}
	fix.WriteString("Make that long-lived data pointer-free or fewer objects: integer keys (map[int64]int64 instead of map[string]int64; intern strings to IDs), values stored inline (map[K]T or []T indexed by int instead of *T), or a byte-arena cache (bigcache/freecache style) for large caches. ")
	advice := goruntime.Headroom(ev.Settings(), uint64(max(c.LiveBytes, 0)), c.GC)
	headroom, shown, caveats := advice.Text, advice.Facts, advice.Caveats
	fix.WriteString(strings.Replace(headroom, "Then give the GC headroom", "Then, if memory allows, give the GC headroom for what remains", 1))
	f.Evidence = append(f.Evidence, shown...)
	f.Config = advice.Config
	if b := ev.Build(); b != nil && !b.GreenTea() {
		switch minor := bundle.GoMinor(b.GoVersion); {
		case minor >= 26:
			fix.WriteString(" This build turns the Green Tea collector off (GOEXPERIMENT=nogreenteagc): rebuild without it; Green Tea marks small objects span by span and cuts the GC's scan cost on heaps like this one.")
		case minor == 25:
			fix.WriteString(" On Go 1.25, try the Green Tea collector (GOEXPERIMENT=greenteagc, the default from Go 1.26): it marks small objects span by span and cuts the GC's scan cost on heaps like this one.")
		default:
			fmt.Fprintf(&fix, " Built with %s: Go 1.26's default Green Tea collector marks small objects span by span and cuts the GC's scan cost on heaps like this one.", b.GoVersion)
		}
		f.Evidence = append(f.Evidence, rules.Text("Green Tea GC", "off ("+b.GoVersion+" "+strings.Join(b.Experiments, ",")+")"))
	}
	f.Fix = fix.String()
	f.Example = "before: byName map[string]*User        // every key and *User scanned each cycle\nafter:  byID map[int64]int32; users []User // IDs index a slice of values; strings interned once"
	if c.CyclesPerSec == 0 {
		f.Caveats = append(f.Caveats, "No runtime statistics at both ends of the window: the GC cycle rate is unknown, so frequent cycles (GC001's case) cannot be ruled out.")
	}
	f.Caveats = append(f.Caveats, caveats...)
	f.Claim = &rules.Claim{Level: rules.LevelRuntime, CPU: cpu.Has(frames.GCFrames)}
	pass.Report(f)
	return nil
}

func firstFlat(sites []evidence.Site) float64 {
	if len(sites) == 0 {
		return 1
	}
	return sites[0].Flat
}

func round2(v float64) float64 { return float64(int64(v*100+0.5)) / 100 }
