// Package g2backlog is the casebook's backlog: a goroutine pile-up that is
// not a leak. One request in AuditEvery (16) records an audit event; in the bad
// variant each event gets a goroutine that waits for the writer slot and
// then writes for 5 ms. Under load events arrive faster than the writer
// drains them (at most 200/s), so goroutines pile up at the semaphore, but
// they are served in turn and the pile drains once the load falls: a
// throughput limit. perfdoctor must not call it a goroutine leak.
//
// The fixed variant bounds the queue: a buffered channel read by the
// writer, dropping (and counting) events when it is full.
//
// This is "any Go service": it imports nothing from perfdoctor.
package g2backlog

import (
	"fmt"
	"net/http"
	"sync/atomic"
	"time"
)

// Variants.
const (
	Bad   = "bad"
	Fixed = "fixed"
)

const (
	writers    = 1
	writeTime  = 5 * time.Millisecond
	AuditEvery = 16
	queueLen   = 256
	// scoreRounds is the per-request work, about 20 µs.
	scoreRounds = 8_000
)

// Handler is the audited service.
type Handler struct {
	bounded bool
	seq     atomic.Uint64
	sem     chan struct{} // bad: writer slots
	queue   chan event    // fixed: the bounded queue
	done    chan struct{}
	Written atomic.Uint64
	Dropped atomic.Uint64
}

type event struct {
	seq  uint64
	body []byte
}

// NewHandler returns the variant's service; Close stops its writers.
func NewHandler(variant string) (*Handler, error) {
	h := &Handler{sem: make(chan struct{}, writers), done: make(chan struct{})}
	switch variant {
	case Bad:
	case Fixed:
		h.bounded = true
		h.queue = make(chan event, queueLen)
		for range writers {
			go h.writer()
		}
	default:
		return nil, fmt.Errorf("g2backlog: unknown variant %q (want %q or %q)", variant, Bad, Fixed)
	}
	return h, nil
}

// Close stops the fixed variant's writers; the bad variant's queued
// goroutines finish on their own.
func (h *Handler) Close() error {
	close(h.done)
	return nil
}

// ServeHTTP scores the request (tens of microseconds of CPU, so that
// net/http's own cost does not dominate) and records an audit event for one
// request in AuditEvery.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	seq := h.seq.Add(1)
	score := seq | 1
	for range scoreRounds {
		score ^= score << 13
		score ^= score >> 7
		score ^= score << 17
	}
	if seq%AuditEvery == 0 {
		ev := event{seq: seq, body: make([]byte, 64)}
		if h.bounded {
			select {
			case h.queue <- ev:
			default:
				h.Dropped.Add(1)
			}
		} else {
			go h.audit(ev)
		}
	}
	fmt.Fprintf(w, "ok %d %d\n", seq, score%1000)
}

// audit waits for a writer slot, then writes.
func (h *Handler) audit(ev event) {
	h.sem <- struct{}{}
	h.write(ev)
	<-h.sem
}

func (h *Handler) writer() {
	for {
		select {
		case ev := <-h.queue:
			h.write(ev)
		case <-h.done:
			return
		}
	}
}

// write stands for a slow downstream (an audit store).
func (h *Handler) write(ev event) {
	time.Sleep(writeTime)
	ev.body[0] = byte(ev.seq)
	h.Written.Add(1)
}
