// Package d1gc reproduces casebook case D1, gc-pressure: a UDP -> Redis -> UDP
// service whose 200 MB heap made the GC "visible everywhere"; a 1 GB ballast
// plus GOGC=300 took it from 80k to 140k QPS.
//
// The live heap is a pointer-rich in-memory cache: 100k profiles linked to
// random peers through tiny edge objects, ~850k small objects, ~20 MB. Each
// request allocates 400 small all-pointer items plus a candidate slice (~45 KB
// in all) and does some allocation-free hashing. With the default GOGC=100 a
// GC cycle starts every ~20 MB of allocation (~25 cycles/s under load on 2
// cores) and re-marks the whole cache each time: marking, assists and
// sweeping take ~30% of CPU. The fixed variant keeps the handler unchanged
// and gives the GC headroom the modern way, a memory limit (GOMEMLIMIT) with
// GOGC off, which replaces the ballast trick: ~1 cycle/s, GC ~3% of CPU, at
// the cost of ~1 GB of RSS instead of ~60 MB.
//
// This is "any Go service": it imports nothing from perfdoctor.
package d1gc

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"runtime"
	"runtime/debug"
	"strconv"
	"sync"
)

// Variants.
const (
	Bad   = "bad"
	Fixed = "fixed"
)

// MemoryLimit is the soft memory limit the fixed variant sets. It costs memory:
// the heap grows towards it (~1 GiB RSS instead of ~60 MB).
const MemoryLimit = 1 << 30

// Sizes chosen so that, on 2 cores under closed-loop load, GC is >= 25% of
// CPU in the bad variant and <= 5% in the fixed one. Sweeping costs per
// allocated span even with GOGC off, so the fixed variant's GC share is set
// by allocated bytes per unit of other work: the hashing keeps it low, and a
// large candidate slice (one span for 38 KB) feeds the GC with few spans.
const (
	cacheSize   = 100_000 // live profiles
	peersPer    = 6       // random peer links (edge objects) per profile
	visitPerReq = 400     // profiles a request walks, one item each
	hashRounds  = 4       // rounds of each of the three per-item hashes
)

// profile is a cache entry. Its links to peers scattered across the heap are
// a chain of tiny edge objects: many small, pointer-only objects, the costly
// kind of live heap for the mark phase.
type profile struct {
	name  string
	edges *edge
	score *int64
}

type edge struct {
	to   *profile
	next *edge
}

// item is per-request garbage: 16 bytes, all pointers.
type item struct {
	prof *profile
	next *item
}

var (
	cacheOnce sync.Once
	cache     []*profile
)

// buildCache fills the shared cache once per process.
func buildCache() {
	cache = make([]*profile, cacheSize)
	for i := range cache {
		score := int64(i)
		cache[i] = &profile{name: "user-" + strconv.Itoa(i), score: &score}
	}
	for i, p := range cache {
		for j := range peersPer {
			p.edges = &edge{to: cache[(i*7919+j*104729+1)%cacheSize], next: p.edges}
		}
	}
}

// Handler returns the service's HTTP handler. Both variants run the same code:
// the case's fix is a GC setting (see Tune), not a code change.
func Handler(variant string) (http.Handler, error) {
	if err := check(variant); err != nil {
		return nil, err
	}
	cacheOnce.Do(buildCache)
	return http.HandlerFunc(serve), nil
}

// Tune applies the variant's GC settings to the process: none for Bad; for
// Fixed a memory limit of MemoryLimit and GOGC off, so the GC runs only when
// the heap nears the limit instead of every time it doubles the live cache.
// It changes process-wide state: call it once at startup.
func Tune(variant string) error {
	if err := check(variant); err != nil {
		return err
	}
	if variant == Fixed {
		debug.SetMemoryLimit(MemoryLimit)
		debug.SetGCPercent(-1)
		// With GOGC off the next cycle is ~1 GiB of allocation away, and heap
		// profiles are as of the last cycle: one now makes the built cache the
		// baseline, as a long-running service's would be, instead of the
		// heap from before it was built.
		runtime.GC()
	}
	return nil
}

func check(variant string) error {
	if variant != Bad && variant != Fixed {
		return fmt.Errorf("d1gc: unknown variant %q (want %q or %q)", variant, Bad, Fixed)
	}
	return nil
}

// serve renders a page of recommendations: one result item per consecutive
// cache entry, the candidate peers they link to, and a score per item, then a
// small summary as the answer.
func serve(w http.ResponseWriter, r *http.Request) {
	start := rand.IntN(len(cache))
	seed := rand.Uint64()
	var head *item
	// Room for two hops of peers, sized at run time: a heap-allocated
	// result set like a real service's (> 32 KB, a span of its own).
	cands := make([]*profile, 0, 2*visitPerReq*peersPer+rand.IntN(8))
	for i := range visitPerReq {
		p := cache[(start+i)%len(cache)]
		head = &item{prof: p, next: head}
		for e := p.edges; e != nil; e = e.next {
			cands = append(cands, e.to)
		}
	}
	var n, best uint64
	for it := head; it != nil; it = it.next {
		name := it.prof.name
		best = max(best, relevance(name, seed)^affinity(name, seed)^diversity(name, seed))
		n++
	}
	buf := make([]byte, 0, 64)
	buf = append(buf, "items="...)
	buf = strconv.AppendUint(buf, n, 10)
	buf = append(buf, " candidates="...)
	buf = strconv.AppendInt(buf, int64(len(cands)), 10)
	buf = append(buf, " best="...)
	buf = strconv.AppendUint(buf, best, 16)
	buf = append(buf, '\n')
	w.Header().Set("Content-Type", "text/plain")
	w.Write(buf)
}

// relevance, affinity and diversity stand for the service's own per-item
// logic: allocation-free CPU work, split in three (and not inlined, so the
// profile attributes it faithfully) so that no single application function
// dominates either variant's profile.

// relevance is an iterated FNV-1a hash of name.
//
//go:noinline
func relevance(name string, seed uint64) uint64 {
	h := seed
	for range hashRounds {
		for i := 0; i < len(name); i++ {
			h = (h ^ uint64(name[i])) * 1099511628211
		}
	}
	return h
}

// affinity is an iterated FNV-1 hash of name (multiply, then xor).
//
//go:noinline
func affinity(name string, seed uint64) uint64 {
	h := seed ^ 0x9e3779b97f4a7c15
	for range hashRounds {
		for i := 0; i < len(name); i++ {
			h = (h * 1099511628211) ^ uint64(name[i])
		}
	}
	return h
}

// diversity is an iterated FNV-1a hash of name read backwards.
//
//go:noinline
func diversity(name string, seed uint64) uint64 {
	h := seed ^ 0xbf58476d1ce4e5b9
	for range hashRounds {
		for i := len(name) - 1; i >= 0; i-- {
			h = (h ^ uint64(name[i])) * 1099511628211
		}
	}
	return h
}
