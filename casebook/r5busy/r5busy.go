// Package r5busy is a healthy control saturated by its load: a fuzzy
// product search whose every request is pure CPU work in its own code (edit
// distances from the query to a few dozen product names, about 100 µs),
// served to many connections at once with the load generator on the same
// cores. The CPUs are fully busy and requests queue for them, which is what
// a right-sized, well-written service looks like at its capacity: there is
// nothing to fix in the code. perfdoctor must report nothing above low on
// it: scheduler time and run-queue waits at saturation are the noise floor,
// not a finding.
//
// Both variants are the same code; "fixed" exists because every case has
// two variants and it must be just as quiet.
//
// This is "any Go service": it imports nothing from perfdoctor.
package r5busy

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
	// Candidates is how many product names each query is compared with.
	Candidates = 20
	// maxName bounds the compared length (the DP rows live on the stack).
	maxName = 40
)

// Handler is the search service.
type Handler struct {
	names   []string
	queries []string
	seq     atomic.Uint64
}

// NewHandler returns the service; both variants are the same.
func NewHandler(variant string) (*Handler, error) {
	if variant != Bad && variant != Fixed {
		return nil, fmt.Errorf("r5busy: unknown variant %q (want %q or %q)", variant, Bad, Fixed)
	}
	h := &Handler{}
	adj := []string{"waterproof", "compact", "wireless", "stainless", "foldable", "ergonomic"}
	noun := []string{"camping lantern", "kettle", "headphones", "desk lamp", "garden hose", "backpack", "speaker"}
	for i := range 2048 {
		h.names = append(h.names, adj[i%len(adj)]+" "+noun[i/len(adj)%len(noun)]+" "+strconv.Itoa(i))
	}
	for i := range 64 {
		h.queries = append(h.queries, adj[(i*5)%len(adj)][:5]+" "+noun[i%len(noun)])
	}
	return h, nil
}

// ServeHTTP answers with the candidate closest to the request's query.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	seq := h.seq.Add(1)
	q := h.queries[seq%uint64(len(h.queries))]
	best, bestDist := 0, 1<<30
	for i := range Candidates {
		c := int((seq*2654435761 + uint64(i)*40503) % uint64(len(h.names)))
		if d := distance(q, h.names[c]); d < bestDist {
			best, bestDist = c, d
		}
	}
	out := make([]byte, 0, 96)
	out = append(out, "match="...)
	out = strconv.AppendQuote(out, h.names[best])
	out = append(out, " distance="...)
	out = strconv.AppendInt(out, int64(bestDist), 10)
	w.Header().Set("Content-Type", "text/plain")
	w.Write(append(out, '\n'))
}

// distance is the Levenshtein distance of a and b, each cut to maxName
// bytes, with two rows on the stack.
//
//go:noinline
func distance(a, b string) int {
	a, b = a[:min(len(a), maxName)], b[:min(len(b), maxName)]
	var prev, cur [maxName + 1]int
	for j := range len(b) + 1 {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}
