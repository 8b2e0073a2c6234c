// Package c1zlib reproduces casebook case C1, compression-level: a Kafka
// worker compressed messages of up to 1.5 MB (P99) with zlib at
// BestCompression. DefaultCompression lost about 0.1% of ratio and saved about
// half of the compression CPU.
//
// Each request compresses one of a few pre-generated batches of JSON event
// records (Payload bytes, semi-compressible: about 7:1) with compress/zlib and
// answers with the sizes and the Adler-32 of the input.
//
//   - Bad: zlib.BestCompression (level 9).
//   - Fixed: zlib.DefaultCompression (level 6).
//
// Both variants reuse their zlib writers (Reset) and output buffers through
// sync.Pools, so the profile shows compression and not allocation or GC: a
// new flate writer allocates about 1 MB of state. At most GOMAXPROCS-1
// requests (at least one) compress at a time: a pool of compression workers
// that leaves a core to the network path, as a Kafka worker would size it.
// The other requests wait for a slot, not in the run queue: a compression
// holds its CPU for tens of milliseconds, and goroutines queued behind it
// would wait as long. The batches live in a
// static arena, not on the heap, so that generating them at startup does not
// stand out in the allocation profile of a short run.
//
// This is "any Go service": it imports nothing from perfdoctor.
package c1zlib

import (
	"bytes"
	"compress/zlib"
	"fmt"
	"hash/adler32"
	"math/rand/v2"
	"net/http"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
)

// Variants.
const (
	Bad   = "bad"
	Fixed = "fixed"
)

// Payload is the size of a batch; batches is how many distinct ones there are.
const (
	Payload = 1 << 20
	batches = 4
)

// Level is the zlib level of each variant.
var Level = map[string]int{Bad: zlib.BestCompression, Fixed: zlib.DefaultCompression}

// slack is room past Payload for the record that crosses it.
const slack = 512

var (
	payloadOnce sync.Once
	arena       [batches][Payload + slack]byte
	payloads    [batches][]byte
	sums        [batches]uint32
)

// Handler is the worker.
type Handler struct {
	level   int
	seq     atomic.Uint64
	writers sync.Pool // *zlib.Writer at level
	bufs    sync.Pool // *bytes.Buffer
	slots   chan struct{}
}

// NewHandler returns the variant's handler.
func NewHandler(variant string) (*Handler, error) {
	level, ok := Level[variant]
	if !ok {
		return nil, fmt.Errorf("c1zlib: unknown variant %q (want %q or %q)", variant, Bad, Fixed)
	}
	payloadOnce.Do(func() {
		for i := range payloads {
			payloads[i] = fill(arena[i][:0], uint64(i), Payload)
			sums[i] = adler32.Checksum(payloads[i])
		}
	})
	h := &Handler{level: level, slots: make(chan struct{}, Workers())}
	h.writers.New = func() any {
		w, err := zlib.NewWriterLevel(nil, level)
		if err != nil {
			panic(err) // the levels above are valid
		}
		return w
	}
	h.bufs.New = func() any { return new(bytes.Buffer) }
	return h, nil
}

// Workers is how many requests compress at a time: GOMAXPROCS-1, at least 1.
func Workers() int { return max(1, runtime.GOMAXPROCS(0)-1) }

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	i := h.seq.Add(1) % batches
	in := payloads[i]
	h.slots <- struct{}{}
	buf := h.bufs.Get().(*bytes.Buffer)
	buf.Reset()
	zw := h.writers.Get().(*zlib.Writer)
	zw.Reset(buf)
	_, err := zw.Write(in)
	if err == nil {
		err = zw.Close()
	}
	h.writers.Put(zw)
	out := buf.Len()
	h.bufs.Put(buf)
	<-h.slots
	if err != nil {
		http.Error(w, "compress: "+err.Error(), http.StatusInternalServerError)
		return
	}
	var b [96]byte
	s := append(b[:0], "in="...)
	s = strconv.AppendInt(s, int64(len(in)), 10)
	s = append(s, " out="...)
	s = strconv.AppendInt(s, int64(out), 10)
	s = append(s, " level="...)
	s = strconv.AppendInt(s, int64(h.level), 10)
	s = append(s, " adler32="...)
	s = strconv.AppendUint(s, uint64(sums[i]), 16)
	s = append(s, '\n')
	w.Header().Set("Content-Type", "text/plain")
	w.Write(s)
}

var words = [...]string{
	"impression", "click", "bid", "win", "loss", "timeout", // events
	"mobile", "desktop", "tablet", // devices
	"video", "banner", "native", // formats
	"US", "CN", "DE", "FR", "JP", // countries
	"android", "ios", // systems
}

// fill appends n bytes of newline-separated JSON event records to b, the
// same for the same seed: repeated field names and values from small
// vocabularies around random ids, timestamps and prices. b must have room for
// n+slack bytes, or append allocates.
func fill(b []byte, seed uint64, n int) []byte {
	r := rand.New(rand.NewPCG(seed, 0xc1))
	for len(b) < n {
		b = append(b, `{"ts":`...)
		b = strconv.AppendInt(b, 1_700_000_000_000+r.Int64N(10_000_000), 10)
		b = append(b, `,"user":`...)
		b = strconv.AppendInt(b, r.Int64N(1_000_000), 10)
		b = append(b, `,"event":"`...)
		b = append(b, words[r.IntN(6)]...)
		b = append(b, `","device":"`...)
		b = append(b, words[6+r.IntN(3)]...)
		b = append(b, `","format":"`...)
		b = append(b, words[9+r.IntN(3)]...)
		b = append(b, `","geo":"`...)
		b = append(b, words[12+r.IntN(5)]...)
		b = append(b, `","os":"`...)
		b = append(b, words[17+r.IntN(2)]...)
		b = append(b, `","price":`...)
		b = strconv.AppendFloat(b, r.Float64()*3, 'f', 4, 64)
		b = append(b, `,"campaign":`...)
		b = strconv.AppendInt(b, r.Int64N(500), 10)
		b = append(b, "}\n"...)
	}
	return b[:n]
}
