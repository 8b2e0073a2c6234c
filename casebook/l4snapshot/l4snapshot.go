// Package l4snapshot reproduces a service whose p99 is set by the garbage
// collector's stop-the-world pauses (finding class gc-pause-tail), although
// its heap is tiny and each pause's own work takes microseconds.
//
// The service answers lookups from a 512 MiB table kept off the Go heap in
// an anonymous mapping, as off-heap caches do to keep the collector cheap.
// A background goroutine snapshots the table into a second mapping every
// 250 ms, for a replica to pick up. Requests allocate a little each, so the
// collector runs many times a second over its small heap.
//
//   - Bad: the snapshot is one copy(snap, table). A copy compiles to a call
//     of runtime.memmove, which cannot be preempted, and 512 MiB takes tens
//     of milliseconds. A collection that starts meanwhile must stop every
//     goroutine, so it waits for the copy to end, and every request in
//     flight waits with it: the pauses are as long as the copy.
//   - Fixed: the same snapshot copied 1 MiB at a time through a function
//     call per chunk, whose prologue is a preemption point: a stop-the-world
//     waits at most for one chunk (~0.2 ms). The CPU the copy costs is the
//     same in both variants.
//
// This is "any Go service": it imports nothing from perfdoctor.
package l4snapshot

import (
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Variants.
const (
	Bad   = "bad"
	Fixed = "fixed"
)

const (
	// TableSize is the size of the table and of its snapshot.
	TableSize = 512 << 20
	// RecordSize is the size of one record.
	RecordSize = 64
	// Every is how often the table is snapshotted.
	Every = 250 * time.Millisecond
	// chunk is what the fixed variant copies between preemption points.
	chunk = 1 << 20
)

// Handler serves GET /?key=N: the record at N, hex-encoded.
type Handler struct {
	variant     string
	table, snap []byte
	snapshots   atomic.Int64
	stop        chan struct{}
	wg          sync.WaitGroup
}

// NewHandler maps and fills the table and starts the snapshot loop.
func NewHandler(variant string) (*Handler, error) {
	if variant != Bad && variant != Fixed {
		return nil, fmt.Errorf("l4snapshot: unknown variant %q", variant)
	}
	h := &Handler{variant: variant, stop: make(chan struct{})}
	var err error
	if h.table, err = mapAnon(TableSize); err != nil {
		return nil, err
	}
	if h.snap, err = mapAnon(TableSize); err != nil {
		syscall.Munmap(h.table)
		return nil, err
	}
	for i := range 4096 {
		h.table[i] = byte(i * 7)
	}
	for n := 4096; n < len(h.table); n *= 2 {
		copy(h.table[n:], h.table[:n])
	}
	copySnapshot(h.snap, h.table, false) // fault the snapshot's pages in once
	h.wg.Add(1)
	go h.snapshotLoop()
	return h, nil
}

func mapAnon(n int) ([]byte, error) {
	b, err := syscall.Mmap(-1, 0, n, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		return nil, fmt.Errorf("l4snapshot: mmap %d bytes: %w", n, err)
	}
	return b, nil
}

func (h *Handler) snapshotLoop() {
	defer h.wg.Done()
	t := time.NewTicker(Every)
	defer t.Stop()
	for {
		select {
		case <-h.stop:
			return
		case <-t.C:
			copySnapshot(h.snap, h.table, h.variant == Fixed)
			h.snapshots.Add(1)
		}
	}
}

// copySnapshot copies table into snap: in one memmove, or chunk by chunk.
func copySnapshot(snap, table []byte, chunked bool) {
	if !chunked {
		copy(snap, table)
		return
	}
	for off := 0; off < len(table); off += chunk {
		copyChunk(snap[off:min(off+chunk, len(snap))], table[off:])
	}
}

// copyChunk is a real call (not inlined): its prologue checks for a
// pending preemption, which a copy inside one function never does.
//
//go:noinline
func copyChunk(dst, src []byte) { copy(dst, src) }

// Snapshots is how many snapshots were taken.
func (h *Handler) Snapshots() int64 { return h.snapshots.Load() }

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	key, err := strconv.Atoi(r.URL.Query().Get("key"))
	if err != nil || key < 0 {
		key = int(time.Now().UnixNano())
		if key < 0 {
			key = -key
		}
	}
	off := (key % (TableSize / RecordSize)) * RecordSize
	rec := h.table[off : off+RecordSize]
	// A response built the ordinary way: a few small allocations per
	// request, which is what runs the collector.
	body := fmt.Sprintf("{\"key\":%d,\"record\":%q,\"snapshot\":%d}\n", key, hex.EncodeToString(rec), h.snapshots.Load())
	w.Header().Set("Content-Type", "application/json")
	w.Write([]byte(body))
}

// Close stops the snapshot loop and unmaps the table.
func (h *Handler) Close() error {
	close(h.stop)
	h.wg.Wait()
	if err := errors.Join(syscall.Munmap(h.snap), syscall.Munmap(h.table)); err != nil {
		return fmt.Errorf("l4snapshot: munmap: %w", err)
	}
	return nil
}
