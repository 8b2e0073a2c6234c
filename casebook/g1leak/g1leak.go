// Package g1leak is the casebook's goroutine leak: a price service asks a
// quote worker for each request and gives up after a 1 ms budget, answering
// with the list price. The bad variant's worker then sends its late quote on
// an unbuffered channel no one reads any more and blocks forever, holding
// its stack and the quote. One request in four is slow, so under load about
// a thousand goroutines leak per second and the process grows until it dies.
//
// The fixed variant gives the channel a buffer of one: the late send
// completes and the worker exits. Everything else is the same.
//
// This is "any Go service": it imports nothing from perfdoctor.
package g1leak

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
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
	// Budget is how long a request waits for its quote.
	Budget = time.Millisecond
	// SlowEvery makes one request in this many miss the budget.
	SlowEvery = 4
	slowQuote = 3 * time.Millisecond
	quoteSize = 2 << 10 // the detail each quote carries
)

// Handler is the price service.
type Handler struct {
	buffered bool
	seq      atomic.Uint64
}

// NewHandler returns the variant's service.
func NewHandler(variant string) (*Handler, error) {
	switch variant {
	case Bad:
		return &Handler{}, nil
	case Fixed:
		return &Handler{buffered: true}, nil
	}
	return nil, fmt.Errorf("g1leak: unknown variant %q (want %q or %q)", variant, Bad, Fixed)
}

type quote struct {
	price  uint64
	detail []byte
}

// ServeHTTP answers with the quoted price, or the list price when the
// quote misses the budget.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	seq := h.seq.Add(1)
	ctx, cancel := context.WithTimeout(r.Context(), Budget)
	defer cancel()
	ch := h.quoteChan()
	go fetchQuote(seq, ch)
	select {
	case q := <-ch:
		fmt.Fprintf(w, "price=%d quoted\n", q.price)
	case <-ctx.Done():
		fmt.Fprintf(w, "price=%d list\n", 100+seq%7)
	}
}

// quoteChan is where the bug is: without a buffer, a quote that arrives
// after the handler returned can never be delivered.
func (h *Handler) quoteChan() chan quote {
	if h.buffered {
		return make(chan quote, 1)
	}
	return make(chan quote)
}

// fetchQuote computes a quote, slowly for one request in SlowEvery (a
// downstream that answers late), and delivers it.
func fetchQuote(seq uint64, ch chan<- quote) {
	if seq%SlowEvery == 0 {
		time.Sleep(slowQuote)
	}
	detail := make([]byte, quoteSize)
	sum := sha256.Sum256([]byte(strconv.FormatUint(seq, 10)))
	copy(detail, sum[:])
	ch <- quote{price: 100 + binary.LittleEndian.Uint64(sum[:8])%50, detail: detail}
}
