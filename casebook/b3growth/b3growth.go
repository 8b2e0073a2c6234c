// Package b3growth reproduces casebook case B3, memory-growth: two heap
// profiles diffed showed the in-use heap growing under load. In the casebook
// the growth drained after the load fell (RSS reached 1 GB and recovered: a
// throughput limit, not a leak); the memory-growth check exists to tell the
// two apart. This reproduction is the side the check must flag: a genuine
// leak.
//
// One request in newEvery is a new visitor: it opens a "session", renders a
// 1-4 KB session record (one pointer-free []byte, which the collector marks
// in one step and which keeps GC work modest) and keeps it in a session
// cache; the other requests are returning visitors who look up an earlier
// session and checksum it.
//
//   - Bad: the cache is a map keyed by the session ID (a counter) and nothing
//     ever deletes from it: ~2.5 KB kept for good per new session. Under the
//     e2e load (concurrency 8, ~15-20k req/s on 2 cores) the live heap grows
//     by 6-9 MiB/s, steadily, with a flat goroutine count: 30-45 MiB over a
//     5 s window, ~0.5 GB of live heap after a minute.
//   - Fixed: the same cache bounded to Capacity sessions, a ring that
//     overwrites the oldest entry (~1.25 MB). The heap stays flat.
//
// This is "any Go service": it imports nothing from perfdoctor.
package b3growth

import (
	"fmt"
	"net/http"
	"strconv"
	"sync"
)

// Variants.
const (
	Bad   = "bad"
	Fixed = "fixed"
)

const (
	// minRecord and maxRecord bound a session record's size: 1-4 KB, spread
	// over the range by the session ID.
	minRecord = 1 << 10
	maxRecord = 4 << 10
	// Capacity is the fixed variant's bound: ~1.25 MB of records. It fills
	// within the first ~3k requests (a fraction of a second under load), so
	// a collection after warm-up sees it full; a larger ring still filling
	// when the window starts reads as growth.
	Capacity = 512
	// newEvery: one request in newEvery opens a new session (and keeps a
	// record); the others return to an earlier one.
	newEvery = 6
	// lookBack is how far back a returning visitor's session is.
	lookBack = 400
	// renderRounds sizes the per-request rendering work (allocation-free
	// CPU that stands for the service's own logic).
	renderRounds = 6
)

// store is a session cache.
type store interface {
	put(id uint64, rec []byte)
	get(id uint64) ([]byte, bool)
}

// leakyStore never deletes: the bad variant.
type leakyStore struct {
	mu       sync.Mutex
	sessions map[uint64][]byte
}

func (s *leakyStore) put(id uint64, rec []byte) {
	s.mu.Lock()
	s.sessions[id] = rec
	s.mu.Unlock()
}

func (s *leakyStore) get(id uint64) ([]byte, bool) {
	s.mu.Lock()
	rec, ok := s.sessions[id]
	s.mu.Unlock()
	return rec, ok
}

// ringStore keeps the last Capacity sessions: the fixed variant. A new
// session overwrites the oldest one's slot.
type ringStore struct {
	mu    sync.Mutex
	ids   [Capacity]uint64
	slots [Capacity][]byte
}

func (s *ringStore) put(id uint64, rec []byte) {
	i := id % Capacity
	s.mu.Lock()
	s.ids[i], s.slots[i] = id, rec
	s.mu.Unlock()
}

func (s *ringStore) get(id uint64) ([]byte, bool) {
	i := id % Capacity
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ids[i] != id || s.slots[i] == nil {
		return nil, false
	}
	return s.slots[i], true
}

// handler is the session service.
type handler struct {
	mu       sync.Mutex
	requests uint64
	store    store
}

// Handler returns the service's HTTP handler for variant, with an empty
// session cache of its own.
func Handler(variant string) (http.Handler, error) {
	switch variant {
	case Bad:
		return &handler{store: &leakyStore{sessions: map[uint64][]byte{}}}, nil
	case Fixed:
		return &handler{store: &ringStore{}}, nil
	}
	return nil, fmt.Errorf("b3growth: unknown variant %q (want %q or %q)", variant, Bad, Fixed)
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.mu.Lock()
	n := h.requests
	h.requests++
	h.mu.Unlock()

	// Every newEvery-th request is a new visitor and opens a session; the
	// others are returning visitors who look up an earlier session.
	sid := n / newEvery
	var size int
	var sum uint64
	if n%newEvery == 0 {
		rec := newSession(sid)
		h.store.put(sid, rec)
		size = len(rec)
	} else if sid >= lookBack {
		if old, ok := h.store.get(sid - lookBack + n%newEvery); ok {
			size, sum = len(old), checksum(old)
		}
	}
	buf := make([]byte, 0, 64)
	buf = append(buf, "session="...)
	buf = strconv.AppendUint(buf, sid, 10)
	buf = append(buf, " bytes="...)
	buf = strconv.AppendInt(buf, int64(size), 10)
	buf = append(buf, " sum="...)
	buf = strconv.AppendUint(buf, sum, 16)
	buf = append(buf, '\n')
	w.Header().Set("Content-Type", "text/plain")
	w.Write(buf)
}

// newSession renders session id's record: one pointer-free allocation of
// 1-4 KB filled with derived bytes.
//
//go:noinline
func newSession(id uint64) []byte {
	n := minRecord + int(id*2654435761%uint64(maxRecord-minRecord+1))
	rec := make([]byte, n)
	h := id ^ 0x9e3779b97f4a7c15
	for range renderRounds {
		for i := range rec {
			h = (h ^ uint64(rec[i])) * 1099511628211
			rec[i] = byte(h >> 32)
		}
	}
	return rec
}

// checksum is an FNV-1a hash of rec.
//
//go:noinline
func checksum(rec []byte) uint64 {
	h := uint64(14695981039346656037)
	for _, b := range rec {
		h = (h ^ uint64(b)) * 1099511628211
	}
	return h
}
