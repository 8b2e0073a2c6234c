// Package b5heap reproduces the gc-scan-heavy-heap finding of casebook case
// B5: a content service kept its caches as maps keyed by long strings
// (map[string]int64 and maps of pointers); moving to integer IDs and
// map[int64]int64 spared the GC, part of a ~60% speed-up.
//
// The service holds Users user profiles in memory and answers each request
// by looking up Lookups of them and ranking them. The per-request work and
// allocation (a render buffer of renderBuf bytes and a few small objects)
// are the same in both variants, so the collector runs about as often in
// both; what differs is what each cycle has to mark:
//
//   - Bad: map[string]*Profile keyed by "user:<id>" strings; each profile is
//     an object with a name string of its own: three small objects per user
//     (key, profile, name), millions of pointers the GC traces every cycle.
//   - Fixed: the same data without pointers: map[int64]int32 from user ID to
//     an index into a []Profile of pointer-free values, names in one byte
//     arena. The GC marks a handful of large noscan objects and skips their
//     contents.
//
// This is "any Go service": it imports nothing from perfdoctor.
package b5heap

import (
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"unsafe"
)

// Variants.
const (
	Bad   = "bad"
	Fixed = "fixed"
)

const (
	// Users is the number of profiles held in memory.
	Users = 1_000_000
	// Lookups is how many profiles a request ranks.
	Lookups = 64
	// renderBuf is the per-request render buffer: with the other small
	// allocations, what sets the GC's pace in both variants.
	renderBuf = 24 << 10
	// rankRounds sizes the per-profile ranking work.
	rankRounds = 2
)

var regions = [...]string{"eu-west", "us-east", "ap-south", "sa-east", "us-west", "eu-north"}

// profile is the bad variant's entry: pointers everywhere.
type profile struct {
	ID       int64
	Name     string // an allocation of its own
	Region   string
	LastSeen int64
	Score    float64
}

// flatProfile is the fixed variant's entry: no pointers. The name lives in
// the arena at [NameOff, NameOff+NameLen); the region is an index.
type flatProfile struct {
	ID       int64
	LastSeen int64
	Score    float64
	NameOff  uint32
	NameLen  uint16
	Region   uint8
}

// Handler is the service.
type Handler struct {
	variant string
	seq     atomic.Uint64

	byKey map[string]*profile // bad

	index map[int64]int32 // fixed: user ID -> position in flat
	flat  []flatProfile
	arena []byte
}

var (
	buildMu sync.Mutex
	built   = map[string]*Handler{}
)

// NewHandler builds the variant's in-memory profiles (1-2 s) and
// returns the service. The profiles are built once per process and variant.
func NewHandler(variant string) (*Handler, error) {
	if variant != Bad && variant != Fixed {
		return nil, fmt.Errorf("b5heap: unknown variant %q (want %q or %q)", variant, Bad, Fixed)
	}
	buildMu.Lock()
	defer buildMu.Unlock()
	if h := built[variant]; h != nil {
		return h, nil
	}
	h := &Handler{variant: variant}
	if variant == Bad {
		h.byKey = make(map[string]*profile, Users)
		for i := range Users {
			p := newProfile(int64(i))
			h.byKey[userKey(nil, p.ID)] = &p
		}
	} else {
		h.index = make(map[int64]int32, Users)
		h.flat = make([]flatProfile, 0, Users)
		h.arena = make([]byte, 0, Users*16)
		region := map[string]uint8{}
		for i, r := range regions {
			region[r] = uint8(i)
		}
		for i := range Users {
			p := newProfile(int64(i))
			h.index[p.ID] = int32(len(h.flat))
			h.flat = append(h.flat, flatProfile{ID: p.ID, LastSeen: p.LastSeen, Score: p.Score,
				NameOff: uint32(len(h.arena)), NameLen: uint16(len(p.Name)), Region: region[p.Region]})
			h.arena = append(h.arena, p.Name...)
		}
	}
	built[variant] = h
	return h, nil
}

// newProfile makes user id's profile deterministically.
func newProfile(id int64) profile {
	return profile{
		ID:       id,
		Name:     "u" + strconv.FormatInt(id*7919%1_000_003, 36),
		Region:   regions[id%int64(len(regions))],
		LastSeen: 1_731_283_200 + id%86_400,
		Score:    float64(id%1000) / 1000,
	}
}

// userKey appends the bad variant's cache key for id: "user:<id>".
func userKey(buf []byte, id int64) string {
	return string(strconv.AppendInt(append(buf[:0], "user:"...), id, 10))
}

// ServeHTTP ranks Lookups profiles and renders the best.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	seq := h.seq.Add(1)
	out := make([]byte, 0, renderBuf+int(seq%8)) // the render buffer (heap: sized at run time)
	var keyBuf [32]byte
	var best uint64
	var bestName string
	found := 0
	x := seq * 0x9e3779b97f4a7c15
	for range Lookups {
		x ^= x >> 29
		x *= 0xbf58476d1ce4e5b9
		id := int64(x % Users)
		var name, region string
		if h.variant == Bad {
			k := strconv.AppendInt(append(keyBuf[:0], "user:"...), id, 10)
			p := h.byKey[string(k)] // no allocation for the lookup
			if p == nil {
				continue
			}
			name, region = p.Name, p.Region
		} else {
			i, ok := h.index[id]
			if !ok {
				continue
			}
			p := &h.flat[i]
			name = unsafeString(h.arena[p.NameOff : p.NameOff+uint32(p.NameLen)])
			region = regions[p.Region]
		}
		found++
		if s := rank(name, region, seq); s > best {
			best, bestName = s, name
		}
	}
	out = append(out, "found="...)
	out = strconv.AppendInt(out, int64(found), 10)
	out = append(out, " best="...)
	out = append(out, bestName...)
	out = append(out, '\n')
	w.Header().Set("Content-Type", "text/plain")
	w.Write(out)
}

// rank stands for the per-profile scoring: allocation-free hashing, split in
// three (and not inlined) so that no single application function dominates
// the profile.
func rank(name, region string, seed uint64) uint64 {
	return recency(name, seed) ^ interest(name, seed) ^ locality(region, seed)
}

//go:noinline
func recency(s string, h uint64) uint64 {
	for range rankRounds * 4 {
		for i := 0; i < len(s); i++ {
			h = (h ^ uint64(s[i])) * 1099511628211
		}
	}
	return h
}

//go:noinline
func interest(s string, h uint64) uint64 {
	h ^= 0x9e3779b97f4a7c15
	for range rankRounds * 4 {
		for i := 0; i < len(s); i++ {
			h = (h * 1099511628211) ^ uint64(s[i])
		}
	}
	return h
}

//go:noinline
func locality(s string, h uint64) uint64 {
	h ^= 0xbf58476d1ce4e5b9
	for range rankRounds * 3 {
		for i := len(s) - 1; i >= 0; i-- {
			h = (h ^ uint64(s[i])) * 1099511628211
		}
	}
	return h
}

// unsafeString views arena bytes as a string without copying. The arena is
// never modified after it is built.
func unsafeString(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}
