// Package control is the casebook's healthy service: a negative control that
// perfdoctor must not diagnose. Case A5 of design/casebook.md is the reason
// it exists: a goroutine pool and fasthttp gave no gain or a loss in a
// service that did not need them, so a doctor must not prescribe from habit.
//
// Each request ranks Candidates catalogue items for a user and answers with
// the best few: CPU work in the service's own code (allocation-free hashing,
// split over three functions as real services spread their work), a handful
// of small allocations, no goroutines of its own, a small response on a
// kept-alive connection. Nothing dominates: no GC pressure, no scheduler
// churn, no serialization, no syscall per write.
//
// Both variants run the same code: there is nothing to fix. "fixed" exists
// because every case has two variants; it must be just as quiet.
//
// This is "any Go service": it imports nothing from perfdoctor.
package control

import (
	"fmt"
	"net/http"
	"strconv"
	"sync/atomic"
)

// Variants.
const (
	Bad   = "bad"
	Fixed = "fixed"
)

const (
	// Candidates is how many catalogue items a request ranks.
	Candidates = 48
	// Top is how many it returns.
	Top = 5
	// rankRounds sizes the per-item work (~2 µs an item).
	rankRounds = 8
)

// Handler is the catalogue service.
type Handler struct {
	items []string
	seq   atomic.Uint64
}

// NewHandler returns the service; both variants are the same.
func NewHandler(variant string) (*Handler, error) {
	if variant != Bad && variant != Fixed {
		return nil, fmt.Errorf("control: unknown variant %q (want %q or %q)", variant, Bad, Fixed)
	}
	h := &Handler{}
	for i := range 4096 {
		h.items = append(h.items, "catalogue-item-"+strconv.Itoa(i)+"-summer-collection")
	}
	return h, nil
}

type scored struct {
	item  int
	score uint64
}

// ServeHTTP ranks the request's candidates and answers with the top items.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	seq := h.seq.Add(1)
	var top [Top]scored // kept sorted, best first
	x := seq * 0x9e3779b97f4a7c15
	for range Candidates {
		x ^= x >> 29
		x *= 0xbf58476d1ce4e5b9
		i := int(x % uint64(len(h.items)))
		name := h.items[i]
		s := scored{i, relevance(name, seq) ^ freshness(name, seq) ^ margin(name, seq)}
		for k := range top {
			if s.score > top[k].score {
				s, top[k] = top[k], s
			}
		}
	}
	out := make([]byte, 0, 256)
	out = append(out, "top="...)
	for k, s := range top {
		if k > 0 {
			out = append(out, ',')
		}
		out = strconv.AppendInt(out, int64(s.item), 10)
	}
	out = append(out, '\n')
	w.Header().Set("Content-Type", "text/plain")
	w.Write(out)
}

// relevance, freshness and margin are the per-item ranking: allocation-free
// hashing, split in three (and not inlined) so that the profile attributes
// it faithfully.

//go:noinline
func relevance(s string, h uint64) uint64 {
	for range rankRounds {
		for i := 0; i < len(s); i++ {
			h = (h ^ uint64(s[i])) * 1099511628211
		}
	}
	return h
}

//go:noinline
func freshness(s string, h uint64) uint64 {
	h ^= 0x9e3779b97f4a7c15
	for range rankRounds {
		for i := 0; i < len(s); i++ {
			h = (h * 1099511628211) ^ uint64(s[i])
		}
	}
	return h
}

//go:noinline
func margin(s string, h uint64) uint64 {
	h ^= 0xbf58476d1ce4e5b9
	for range rankRounds {
		for i := len(s) - 1; i >= 0; i-- {
			h = (h ^ uint64(s[i])) * 1099511628211
		}
	}
	return h
}
