// Package b1churn reproduces casebook case B1, goroutine-churn: an ad
// delivery service started ~10 goroutines per request to write rate-limit
// data to Redis. The async work took 70% of CPU and p90 was ~1 s at 100 QPS;
// the goroutines spent most of their lives blocked. Pools sized per task
// brought CPU to 30% and p90 to 30-40 ms at twice the QPS.
//
// The service starts its own rate-limit store: one goroutine that owns the
// counters (fixed one-second windows) and answers commands sent over a
// channel, one round trip per command, as a Redis connection would. Each
// request renders its answer (allocation-free hashing split over three
// functions, the service's own work) and records Keys rate-limit counters
// (user, device, IP, campaign, ...).
//
//   - Bad: one goroutine per counter, fire-and-forget, Keys per request.
//     Each takes one of Conns client connections (waiting on the pool's
//     sync.Cond while all are busy, as redigo's pool does with Wait), then
//     reads the key's limit, sends INCR and then EXPIRE, waiting for each
//     reply. Under load they queue on the pool and the store, and their
//     number grows with the load.
//   - Fixed: a pool sized for the task: Writers long-lived goroutines fed by
//     a bounded queue of per-request batches. Every flushEvery a writer takes
//     what is queued and sends it as pipelined commands (INCR and EXPIRE for
//     every key), as a Redis pipeline would. The writers wait on a ticker,
//     not on the queue, so enqueueing wakes nobody; when the queue is full
//     the request waits (back-pressure, not unbounded goroutines).
//
// This is "any Go service": it imports nothing from perfdoctor.
package b1churn

import (
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Variants.
const (
	Bad   = "bad"
	Fixed = "fixed"
)

const (
	// Keys is how many rate-limit counters each request records.
	Keys = 10
	// Writers is the fixed variant's pool, one connection each: the store
	// has one connection's worth of throughput, so a couple of writers that
	// pipeline keep it busy.
	Writers = 2
	// Conns is the bad variant's client connection pool size.
	Conns = 4
	// queueBatches bounds the fixed variant's queue (requests' batches).
	queueBatches = 4096
	// flushEvery is how often each writer sends what is queued.
	flushEvery = 2 * time.Millisecond
	// maxPipeline is the most counters one pipelined command carries.
	maxPipeline = 512
	// renderRounds sizes the per-request work.
	renderRounds = 30
	window       = time.Second
	limit        = 1000 // requests per window per key
	clockTick    = 10 * time.Millisecond
)

// keyNames are the dimensions a request is rate-limited on.
var keyNames = [Keys]string{"user", "device", "ip", "campaign", "publisher", "placement", "country", "app", "creative", "advertiser"}

// Store operations. A naive fixed-window rate limiter sends GET limit, INCR
// key, then EXPIRE key window: three round trips per counter. A pipeline
// sends INCR and EXPIRE for many keys in one (limits are cached).
const (
	opGet = iota
	opIncr
	opExpire
	opIncrExpire // pipelined: INCR and EXPIRE for every key
)

// command is one store round trip.
type command struct {
	op    int
	keys  []uint64
	reply chan int64
}

// counter is one rate-limit window.
type counter struct {
	n       int64
	expires int64 // unix nanoseconds; 0 = no expiry set
}

// store is the in-process stand-in for Redis: a single goroutine owns the
// counters and answers each command.
type store struct {
	cmds     chan command
	done     chan struct{}
	counters map[uint64]counter
	applied  atomic.Int64 // increments
	lastReap int64
	clock    atomic.Int64 // unix nanoseconds, updated every clockTick
}

func newStore() *store {
	s := &store{cmds: make(chan command, 64), done: make(chan struct{}), counters: make(map[uint64]counter, 1<<12)}
	s.clock.Store(time.Now().UnixNano())
	go s.run()
	go s.tick()
	return s
}

// tick keeps a coarse clock, as servers do, instead of reading the time per
// command.
func (s *store) tick() {
	t := time.NewTicker(clockTick)
	defer t.Stop()
	for {
		select {
		case now := <-t.C:
			s.clock.Store(now.UnixNano())
		case <-s.done:
			return
		}
	}
}

func (s *store) run() {
	defer close(s.done)
	for c := range s.cmds {
		now := s.clock.Load()
		if now-s.lastReap >= int64(window) { // drop expired windows
			for k, v := range s.counters {
				if v.expires != 0 && v.expires <= now {
					delete(s.counters, k)
				}
			}
			s.lastReap = now
		}
		var top int64
		if c.op == opGet {
			c.reply <- limit
			continue
		}
		for _, k := range c.keys {
			v := s.counters[k]
			if v.expires != 0 && v.expires <= now {
				v = counter{}
			}
			if c.op != opExpire {
				v.n++
				top = max(top, v.n)
			}
			if c.op != opIncr && v.expires == 0 {
				v.expires = now + int64(window)
			}
			s.counters[k] = v
		}
		if c.op != opExpire {
			s.applied.Add(int64(len(c.keys)))
		}
		c.reply <- top
	}
}

// do is one round trip.
func (s *store) do(op int, keys []uint64, reply chan int64) int64 {
	s.cmds <- command{op: op, keys: keys, reply: reply}
	return <-reply
}

// connPool is a Redis client's connection pool in the style of redigo's
// with Wait set: at most n connections in use, callers wait on a sync.Cond
// for one to be returned.
type connPool struct {
	mu   sync.Mutex
	cond sync.Cond
	free int
}

func (p *connPool) init(n int) {
	p.free = n
	p.cond.L = &p.mu
}

func (p *connPool) get() {
	p.mu.Lock()
	for p.free == 0 {
		p.cond.Wait()
	}
	p.free--
	p.mu.Unlock()
}

func (p *connPool) put() {
	p.mu.Lock()
	p.free++
	p.mu.Unlock()
	p.cond.Signal()
}

// Handler is the service. Close stops the writers and the store.
type Handler struct {
	variant string
	st      *store
	conns   connPool // bad variant: the client's connection pool
	seq     atomic.Uint64

	queue    chan *[Keys]uint64 // fixed variant
	stop     chan struct{}
	writers  sync.WaitGroup
	inflight sync.WaitGroup // bad variant's goroutines
	closed   sync.Once
}

// NewHandler starts the store (and the fixed variant's writers).
func NewHandler(variant string) (*Handler, error) {
	if variant != Bad && variant != Fixed {
		return nil, fmt.Errorf("b1churn: unknown variant %q (want %q or %q)", variant, Bad, Fixed)
	}
	h := &Handler{variant: variant, st: newStore()}
	h.conns.init(Conns)
	if variant == Fixed {
		h.queue = make(chan *[Keys]uint64, queueBatches)
		h.stop = make(chan struct{})
		for i := range Writers {
			h.writers.Add(1)
			go h.writer(time.Duration(i) * flushEvery / Writers)
		}
	}
	return h, nil
}

// Recorded is how many counter increments the store has applied.
func (h *Handler) Recorded() int64 { return h.st.applied.Load() }

// Close drains the writers (or waits for the bad variant's goroutines) and
// stops the store. The handler must not serve afterwards.
func (h *Handler) Close() error {
	h.closed.Do(func() {
		if h.stop != nil {
			close(h.stop) // the writers flush what is queued and return
		}
		h.writers.Wait()
		h.inflight.Wait()
		close(h.st.cmds)
		<-h.st.done
	})
	return nil
}

var batchPool = sync.Pool{New: func() any { return new([Keys]uint64) }}

// ServeHTTP renders the answer and records the request's counters.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	seq := h.seq.Add(1)
	var keys [Keys]uint64
	for i, name := range keyNames {
		keys[i] = key(name, seq%uint64(97+i))
	}
	if h.variant == Bad {
		for _, k := range keys {
			h.inflight.Add(1)
			go func() { // one goroutine per counter, per request
				defer h.inflight.Done()
				reply, key := make(chan int64, 1), []uint64{k}
				h.conns.get() // waits (sync.Cond) while all connections are busy
				if h.st.do(opGet, key, reply) > 0 {
					h.st.do(opIncr, key, reply)
					h.st.do(opExpire, key, reply)
				}
				h.conns.put()
			}()
		}
	} else {
		b := batchPool.Get().(*[Keys]uint64)
		*b = keys
		h.queue <- b // waits when the pool is behind: bounded
	}
	score := render(seq)
	var buf [48]byte
	out := append(buf[:0], "ok score="...)
	out = strconv.AppendUint(out, score, 16)
	out = append(out, '\n')
	w.Header().Set("Content-Type", "text/plain")
	w.Write(out)
}

// writer is one of the fixed variant's pool. Every flushEvery it takes what
// is queued and sends it as pipelined commands of up to maxPipeline
// counters. It waits on its ticker, not on the queue, so requests enqueue
// without waking it.
func (h *Handler) writer(offset time.Duration) {
	defer h.writers.Done()
	keys := make([]uint64, 0, maxPipeline)
	reply := make(chan int64, 1)
	time.Sleep(offset)
	t := time.NewTicker(flushEvery)
	defer t.Stop()
	for {
		var stopping bool
		select {
		case <-t.C:
		case <-h.stop:
			stopping = true
		}
	drain:
		for {
			select {
			case b := <-h.queue:
				keys = append(keys, b[:]...)
				batchPool.Put(b)
				if len(keys)+Keys > maxPipeline {
					h.st.do(opIncrExpire, keys, reply)
					keys = keys[:0]
				}
			default:
				break drain
			}
		}
		if len(keys) > 0 {
			h.st.do(opIncrExpire, keys, reply)
			keys = keys[:0]
		}
		if stopping {
			return
		}
	}
}

// key hashes a rate-limit dimension and its value.
func key(name string, v uint64) uint64 {
	h := uint64(14695981039346656037) ^ v
	for i := 0; i < len(name); i++ {
		h = (h ^ uint64(name[i])) * 1099511628211
	}
	return h
}

// render stands for the request's own work: allocation-free hashing, split
// in three (and not inlined) so that no single application function
// dominates the profile.
func render(seq uint64) uint64 {
	return layout(seq) ^ pricing(seq) ^ tracking(seq)
}

//go:noinline
func layout(x uint64) uint64 {
	for range renderRounds * 16 {
		x ^= x >> 30
		x *= 0xbf58476d1ce4e5b9
		x ^= x >> 27
	}
	return x
}

//go:noinline
func pricing(x uint64) uint64 {
	for range renderRounds * 16 {
		x ^= x >> 31
		x *= 0x94d049bb133111eb
		x ^= x >> 29
	}
	return x
}

//go:noinline
func tracking(x uint64) uint64 {
	for range renderRounds * 16 {
		x ^= x >> 33
		x *= 0xff51afd7ed558ccd
		x ^= x >> 33
	}
	return x
}
