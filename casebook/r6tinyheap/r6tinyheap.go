// Package r6tinyheap is a healthy control with a tiny heap and a very high
// GC rate: an export service that renders each request's CSV (Rows rows,
// about 24 KB) into a buffer allocated for it, sized once from the row
// count, and writes it. That one pointer-free buffer is all a request
// allocates that outlives a call, and the live heap is a few hundred KB, so
// the collector runs at its 4 MB minimum heap: a hundred or more cycles per
// second under load, each one cheap (little to mark, nothing to scan, one
// span to sweep per request). The heap never grows.
// perfdoctor must report nothing above low: a high cycle rate over a tiny
// heap is not GC pressure, and a heap moving between 1 and 5 MB is not a
// leak.
//
// Both variants are the same code; "fixed" exists because every case has
// two variants and it must be just as quiet.
//
// This is "any Go service": it imports nothing from perfdoctor.
package r6tinyheap

import (
	"bytes"
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
	// Rows is how many rows each export has.
	Rows = 800
	// rowBytes bounds a rendered row (31 bytes at most), to size the
	// buffer once.
	rowBytes = 32
)

// header is the CSV's first line's length, with its newline.
const header = len("day,region,orders,revenue_cents\n")

// Handler is the export service.
type Handler struct {
	regions []string
	seq     atomic.Uint64
}

// NewHandler returns the service; both variants are the same.
func NewHandler(variant string) (*Handler, error) {
	if variant != Bad && variant != Fixed {
		return nil, fmt.Errorf("r6tinyheap: unknown variant %q (want %q or %q)", variant, Bad, Fixed)
	}
	return &Handler{regions: []string{"eu-west", "eu-north", "us-east", "us-west", "ap-south"}}, nil
}

// ServeHTTP renders the request's export into one buffer sized for it.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	seq := h.seq.Add(1)
	var buf bytes.Buffer
	buf.Grow(header + Rows*rowBytes)
	buf.WriteString("day,region,orders,revenue_cents\n")
	var row [64]byte
	x := seq*0x9e3779b97f4a7c15 | 1
	for i := range Rows {
		x ^= x >> 29
		x *= 0xbf58476d1ce4e5b9
		b := strconv.AppendInt(row[:0], int64(20260101+i%28), 10)
		b = append(b, ',')
		b = append(b, h.regions[x%uint64(len(h.regions))]...)
		b = append(b, ',')
		b = strconv.AppendUint(b, x>>54, 10)
		b = append(b, ',')
		b = strconv.AppendUint(b, (x>>20)%10000000, 10)
		b = append(b, '\n')
		buf.Write(b)
	}
	w.Header().Set("Content-Type", "text/csv")
	w.Header().Set("Content-Length", strconv.Itoa(buf.Len()))
	w.Write(buf.Bytes())
}
