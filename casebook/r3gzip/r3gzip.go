// Package r3gzip is an HTTP service whose CPU is saturated by compression:
// it serves a catalogue export (a JSON document of about Size bytes that a
// publisher replaces every Refresh) gzip-encoded, compressing it again for
// every response at gzip.BestCompression with a fresh gzip.Writer. Under
// load the two CPUs are busy compressing, so request goroutines also wait
// long to run: the scheduling latency is a symptom, compression the cause.
//
//   - Bad: per response, gzip.NewWriterLevel(w, gzip.BestCompression) (a
//     new compressor of about 1 MB of state each time), the document
//     written through it.
//   - Fixed: the document is compressed once when it is published, and
//     every response writes the cached compressed bytes. The level then
//     hardly matters (one compression per Refresh); BestCompression is
//     kept for the smaller body.
//
// Both variants answer the same bytes for the same version: gzip output is
// deterministic for a given level and input, and no header fields vary.
//
// This is "any Go service": it imports nothing from perfdoctor.
package r3gzip

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"
)

// Variants.
const (
	Bad   = "bad"
	Fixed = "fixed"
)

const (
	// Size is the approximate size of the JSON document.
	Size = 96 << 10
	// Refresh is how often the publisher replaces the document.
	Refresh = 2 * time.Second
	// Level is the gzip level of both variants.
	Level = gzip.BestCompression
)

// doc is one published version: the JSON, and in the fixed variant its
// compressed form.
type doc struct {
	version int
	json    []byte
	gz      []byte
}

// Handler is the export service. Close stops its publisher.
type Handler struct {
	variant string
	cur     atomic.Pointer[doc]
	stop    chan struct{}
	done    chan struct{}
}

// NewHandler publishes the first version and starts the publisher.
func NewHandler(variant string) (*Handler, error) {
	if variant != Bad && variant != Fixed {
		return nil, fmt.Errorf("r3gzip: unknown variant %q (want %q or %q)", variant, Bad, Fixed)
	}
	h := &Handler{variant: variant, stop: make(chan struct{}), done: make(chan struct{})}
	if err := h.publish(1); err != nil {
		return nil, err
	}
	go h.publisher()
	return h, nil
}

// Close stops the publisher.
func (h *Handler) Close() error {
	close(h.stop)
	<-h.done
	return nil
}

func (h *Handler) publisher() {
	defer close(h.done)
	t := time.NewTicker(Refresh)
	defer t.Stop()
	for v := 2; ; v++ {
		select {
		case <-h.stop:
			return
		case <-t.C:
			h.publish(v) // the level is valid: publish cannot fail after the first
		}
	}
}

// publish makes version v current; the fixed variant compresses it here,
// once.
func (h *Handler) publish(v int) error {
	d := &doc{version: v, json: Catalogue(v)}
	if h.variant == Fixed {
		var buf bytes.Buffer
		if err := compress(&buf, d.json); err != nil {
			return err
		}
		d.gz = buf.Bytes()
	}
	h.cur.Store(d)
	return nil
}

// Version is the current document's version.
func (h *Handler) Version() int { return h.cur.Load().version }

// ServeHTTP answers with the current document, gzip-encoded.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	d := h.cur.Load()
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Encoding", "gzip")
	w.Header().Set("ETag", `"v`+strconv.Itoa(d.version)+`"`)
	if h.variant == Fixed {
		w.Header().Set("Content-Length", strconv.Itoa(len(d.gz)))
		w.Write(d.gz)
		return
	}
	if err := compress(w, d.json); err != nil {
		// Headers are sent by now; the client sees a truncated body.
		return
	}
}

// compress writes data gzip-encoded at Level through a new writer.
func compress(w interface{ Write([]byte) (int, error) }, data []byte) error {
	zw, err := gzip.NewWriterLevel(w, Level)
	if err != nil {
		return err
	}
	if _, err := zw.Write(data); err != nil {
		return err
	}
	return zw.Close()
}

// Catalogue renders version v of the export: product records with the
// repetition real catalogues have (field names, categories, units) and
// per-product values (about 5:1 with gzip).
func Catalogue(v int) []byte {
	cats := []string{"outdoor", "kitchen", "garden", "office", "toys", "audio", "lighting"}
	b := make([]byte, 0, Size+512)
	b = append(b, `{"version":`...)
	b = strconv.AppendInt(b, int64(v), 10)
	b = append(b, `,"products":[`...)
	x := uint64(v)*0x9e3779b97f4a7c15 + 1
	for i := 0; len(b) < Size; i++ {
		x ^= x >> 31
		x *= 0xbf58476d1ce4e5b9
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"sku":"SKU-`...)
		b = strconv.AppendUint(b, x%1000000, 36)
		b = append(b, `","category":"`...)
		b = append(b, cats[x%uint64(len(cats))]...)
		b = append(b, `","price":{"amount":`...)
		b = strconv.AppendUint(b, 100+x%90000, 10)
		b = append(b, `,"currency":"EUR"},"stock":`...)
		b = strconv.AppendUint(b, (x>>20)%500, 10)
		b = append(b, `,"weight_g":`...)
		b = strconv.AppendUint(b, (x>>32)%20000, 10)
		b = append(b, `,"title":"Product `...)
		b = strconv.AppendInt(b, int64(i), 10)
		b = append(b, ` of the `...)
		b = append(b, cats[(x>>8)%uint64(len(cats))]...)
		b = append(b, ` range"}`...)
	}
	return append(b, "]}\n"...)
}
