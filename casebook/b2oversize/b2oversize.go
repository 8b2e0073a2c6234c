// Package b2oversize reproduces casebook case B2, oversized-allocation: a
// content delivery service made its per-request report slices with an
// unreasonable length; later a slice sized for the maximum number of live
// streamers drove RSS past 5 GB at 500 QPS.
//
// The service holds the live state of about MaxLiveStreamers streamers in
// 1,000 categories (about 30 MB, mostly each streamer's last hour of viewer
// counts). Each request reports on one category's streamers (50 to
// 149 of them): it fills one Entry per streamer, ranks them and answers with
// a summary.
//
//   - Bad: entries := make([]Entry, MaxLiveStreamers): 100,000 entries of
//     56 bytes, 5.6 MB allocated and zeroed per request, of which 50 to 149
//     are used.
//   - Fixed: entries := make([]Entry, 0, len(category)): sized from the
//     actual need.
//
// This is "any Go service": it imports nothing from perfdoctor.
package b2oversize

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

// MaxLiveStreamers is the platform's capacity, the bad variant's slice
// length.
const MaxLiveStreamers = 100_000

const (
	categories  = 1000
	perCategory = 100 // streamers live in a category, on average
	rankRounds  = 2   // rounds of each of the three per-entry hashes
)

// Entry is one line of a report. Region and Title are strings, so a slice of
// entries holds pointers: the allocator zeroes it and the GC scans it.
type Entry struct {
	StreamerID int64
	Viewers    int32
	BitrateKb  int32
	Score      uint64
	Region     string
	Title      string
}

// streamer is the service's live state (read-only here).
type streamer struct {
	id             int64
	viewers, bitKb int32
	region, title  string
}

// Handler is the reporting service.
type Handler struct {
	variant    string
	byCategory [categories][]streamer
	history    [categories][][60]int32 // viewers per minute, last hour; pointer-free
	seq        atomic.Uint64
}

// NewHandler builds the live state and returns the variant's service.
func NewHandler(variant string) (*Handler, error) {
	if variant != Bad && variant != Fixed {
		return nil, fmt.Errorf("b2oversize: unknown variant %q (want %q or %q)", variant, Bad, Fixed)
	}
	h := &Handler{variant: variant}
	regions := []string{"eu-west", "us-east", "ap-south", "sa-east"}
	for c := range categories {
		n := perCategory/2 + (c*37)%perCategory // 50 .. 149 streamers
		h.byCategory[c] = make([]streamer, n)
		h.history[c] = make([][60]int32, n)
		for i := range n {
			id := int64(c*10_000 + i)
			s := &h.byCategory[c][i]
			*s = streamer{
				id: id, viewers: int32((i*7919 + c*104729) % 50_000), bitKb: int32(1500 + (i*31)%6000),
				region: regions[(c+i)%len(regions)], title: "stream-" + strconv.FormatInt(id, 10) + "-live-now",
			}
			for m := range h.history[c][i] {
				h.history[c][i][m] = s.viewers + int32((m*i)%97)
			}
		}
	}
	return h, nil
}

// ServeHTTP reports on one category's live streamers.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	seq := h.seq.Add(1)
	live, history := h.byCategory[seq%categories], h.history[seq%categories]

	var entries []Entry
	if h.variant == Bad {
		entries = make([]Entry, MaxLiveStreamers) // sized for the platform, not the request
	} else {
		entries = make([]Entry, 0, len(live)) // sized from the actual need
	}
	entries = fill(entries, live, history, seq)

	var viewers int64
	var best Entry
	for _, e := range entries {
		viewers += int64(e.Viewers)
		if e.Score > best.Score {
			best = e
		}
	}
	var buf [128]byte
	out := append(buf[:0], "streamers="...)
	out = strconv.AppendInt(out, int64(len(entries)), 10)
	out = append(out, " viewers="...)
	out = strconv.AppendInt(out, viewers, 10)
	out = append(out, " top="...)
	out = append(out, best.Title...)
	out = append(out, '\n')
	w.Header().Set("Content-Type", "text/plain")
	w.Write(out)
}

// fill writes one entry per live streamer. With a slice made at full
// length it writes by index and returns the used prefix; with an empty one
// it appends.
func fill(entries []Entry, live []streamer, history [][60]int32, seq uint64) []Entry {
	full := len(entries) > 0
	for i := range live {
		s := &live[i]
		e := Entry{StreamerID: s.id, Viewers: s.viewers, BitrateKb: s.bitKb, Region: s.region, Title: s.title,
			Score: rank(s.title, seq) + trend(&history[i])}
		if full {
			entries[i] = e
		} else {
			entries = append(entries, e)
		}
	}
	if full {
		entries = entries[:len(live)]
	}
	return entries
}

// trend is the viewer growth over the last five minutes.
func trend(perMinute *[60]int32) uint64 {
	var d int64
	for m := 55; m < 60; m++ {
		d += int64(perMinute[m] - perMinute[m-1])
	}
	return uint64(max(d, 0))
}

// rank stands for the per-entry scoring: allocation-free hashing, split in
// three (and not inlined) so that no single application function dominates
// the profile.
func rank(title string, seed uint64) uint64 {
	return freshness(title, seed) ^ popularity(title, seed) ^ quality(title, seed)
}

//go:noinline
func freshness(s string, h uint64) uint64 {
	for range rankRounds {
		for i := 0; i < len(s); i++ {
			h = (h ^ uint64(s[i])) * 1099511628211
		}
	}
	return h
}

//go:noinline
func popularity(s string, h uint64) uint64 {
	h ^= 0x9e3779b97f4a7c15
	for range rankRounds {
		for i := 0; i < len(s); i++ {
			h = (h * 1099511628211) ^ uint64(s[i])
		}
	}
	return h
}

//go:noinline
func quality(s string, h uint64) uint64 {
	h ^= 0xbf58476d1ce4e5b9
	for range rankRounds {
		for i := len(s) - 1; i >= 0; i-- {
			h = (h ^ uint64(s[i])) * 1099511628211
		}
	}
	return h
}
