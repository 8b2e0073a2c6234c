// Package a3sched reproduces casebook case A3, scheduler-overhead: an ad
// exchange on 7-core pods whose Go runtime (before Go 1.25) saw the host's
// cores, so GOMAXPROCS was far above the CPU the pod could use;
// runtime.findrunnable took 15% of CPU. The fix was GOMAXPROCS = the pod's
// cores (together with GOGC=2000 for the GC part of the same case).
//
// Each request fans Items bid candidates out to a bounded pool of long-lived
// scoring goroutines and gathers the results: short goroutine handoffs, each
// of which readies a goroutine and, while some P is idle, wakes a thread to
// look for work. Both variants run the same code; only GOMAXPROCS differs:
//
//   - Bad: GOMAXPROCS=BadProcs, far above the machine's CPUs, as Go before
//     1.25 set it in a small pod on a large host. Every wake-up starts a
//     thread spinning through all the Ps to steal work and then sleeping
//     again: runtime.findRunnable, stealWork, futex wake-ups and sleeps take
//     a large share of the CPU.
//   - Fixed: GOMAXPROCS unset, so Go >= 1.25 sizes it to the CPUs the
//     process may use (the cgroup quota when there is one), as
//     go.uber.org/automaxprocs did on older Go.
//
// Both variants run with GOGC=2000, the casebook's fix for the GC half of
// A3, and allocate little per request: with BadProcs Ps every GC cycle is
// expensive (a mark worker per idle P), and this case isolates the
// scheduler.
//
// The settings must be visible to an outside observer the way they are in
// production: in the process environment (/proc/PID/environ). Setup
// therefore re-executes the process (execve: same PID, same arguments) with
// the variant's environment when it differs; a runtime.GOMAXPROCS call alone
// would be invisible to a tool reading the environment.
//
// This is "any Go service": it imports nothing from perfdoctor.
package a3sched

import (
	"fmt"
	"net/http"
	"os"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/perfdoctor/perfdoctor/casebook/internal/procenv"
)

// Variants.
const (
	Bad   = "bad"
	Fixed = "fixed"
)

// BadProcs is the bad variant's GOMAXPROCS: what Go before 1.25 chose in a
// pod on a 256-vCPU node (two 64-core sockets with SMT), far above the CPUs
// the pod gets. The oversubscription (128x on 2 CPUs) is larger than the
// casebook's (a 7-core pod), so that the scheduler dominates on a 2-CPU
// machine that the load generator shares: there the scheduler took 27-30%
// of CPU with 256 Ps, 19-23% with 128, and less with 64.
const BadProcs = 256

// GOGC is both variants' GC setting.
const GOGC = 2000

const (
	// Items is how many candidates each request scores in parallel.
	Items = 4
	// Workers is the size of the scoring pool. It is bounded and long-lived:
	// this case is about handoffs, not goroutine creation (see B1).
	Workers = 64
	// rounds of hashing per candidate (a few microseconds in all).
	rounds = 108
)

// floorEntries is the size of the bid-floor table.
const floorEntries = 1 << 16

// Env returns the Go runtime environment the variant runs with. An empty
// value means unset: GOMAXPROCS then follows the CPUs (and cgroup quota)
// the process may use. The bad variant keeps a GOMAXPROCS already in the
// environment.
func Env(variant string) (map[string]string, error) {
	if err := check(variant); err != nil {
		return nil, err
	}
	env := map[string]string{"GOGC": strconv.Itoa(GOGC), "GOMAXPROCS": ""}
	if variant == Bad {
		// Go before 1.25 took the host's CPU count unless GOMAXPROCS was
		// set in the environment: an operator's setting (or perfdoctor
		// try's prescription) wins over BadProcs, as it did there.
		env["GOMAXPROCS"] = strconv.Itoa(BadProcs)
		if v := os.Getenv("GOMAXPROCS"); v != "" {
			env["GOMAXPROCS"] = v
		}
	}
	return env, nil
}

// Setup gives the process the variant's runtime environment (see Env and
// procenv.Setup): with reexec it re-executes the process when the
// environment differs, so call it before any listener is opened; without,
// it applies the settings in-process and returns a function that restores
// them.
func Setup(variant string, reexec bool) (restore func(), err error) {
	want, err := Env(variant)
	if err != nil {
		return nil, err
	}
	return procenv.Setup(want, reexec)
}

func check(variant string) error {
	if variant != Bad && variant != Fixed {
		return fmt.Errorf("a3sched: unknown variant %q (want %q or %q)", variant, Bad, Fixed)
	}
	return nil
}

// job is one candidate handed to the pool.
type job struct {
	id, seed uint64
	price    uint64
	reply    chan *job
}

// Handler is the bid-scoring service. Close stops its workers.
type Handler struct {
	jobs   chan *job
	floors []uint32
	seed   atomic.Uint64
}

// NewHandler starts the scoring pool and returns the service. The handler
// code is the same for both variants; the variant only selects GOMAXPROCS
// (see Setup).
func NewHandler(variant string) (*Handler, error) {
	if err := check(variant); err != nil {
		return nil, err
	}
	h := &Handler{jobs: make(chan *job, Workers), floors: make([]uint32, floorEntries)}
	x := uint64(1)
	for i := range h.floors {
		x = x*6364136223846793005 + 1442695040888963407
		h.floors[i] = uint32(x >> 40)
	}
	for range Workers {
		go h.worker()
	}
	return h, nil
}

// Close stops the workers. The handler must not be used afterwards.
func (h *Handler) Close() error {
	close(h.jobs)
	return nil
}

// worker scores candidates until the pool is closed.
func (h *Handler) worker() {
	for j := range h.jobs {
		h.score(j)
		j.reply <- j
	}
}

// request is one request's candidates and the channel they come back on,
// reused across requests (the case is about the scheduler, not allocation).
type request struct {
	jobs  []job
	reply chan *job
}

var requests = sync.Pool{New: func() any {
	return &request{jobs: make([]job, Items), reply: make(chan *job, Items)}
}}

// ServeHTTP fans Items candidates out to the pool, gathers them, and answers
// with the best price: two goroutine handoffs per candidate.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	req := requests.Get().(*request)
	defer requests.Put(req)
	seed := h.seed.Add(0x9e3779b97f4a7c15)
	for i := range req.jobs {
		j := &req.jobs[i]
		j.id, j.seed, j.reply = uint64(i), seed, req.reply
		h.jobs <- j
	}
	var best uint64
	for range Items {
		best = max(best, (<-req.reply).price)
	}
	var b [48]byte
	buf := b[:0]
	buf = append(buf, "items="...)
	buf = strconv.AppendInt(buf, Items, 10)
	buf = append(buf, " best="...)
	buf = strconv.AppendUint(buf, best, 16)
	buf = append(buf, '\n')
	w.Header().Set("Content-Type", "text/plain")
	w.Write(buf)
}

// score stands for the per-candidate work: allocation-free hashing and a
// bid-floor lookup, a few microseconds split over three functions (not
// inlined, so the profile attributes them faithfully) so that no single
// application function dominates either variant's profile.
func (h *Handler) score(j *job) {
	x := quality(pacing(relevance(j.seed ^ j.id)))
	j.price = x>>32 + uint64(h.floors[x&(floorEntries-1)])
}

// relevance, pacing and quality are splitmix64's finalizer iterated: the
// same cost each, written out three times so that the profile charges them
// to three functions.

//go:noinline
func relevance(x uint64) uint64 {
	for range rounds / 3 * 16 {
		x ^= x >> 30
		x *= 0xbf58476d1ce4e5b9
		x ^= x >> 27
		x *= 0x94d049bb133111eb
		x ^= x >> 31
	}
	return x
}

//go:noinline
func pacing(x uint64) uint64 {
	for range rounds / 3 * 16 {
		x ^= x >> 31
		x *= 0x94d049bb133111eb
		x ^= x >> 29
		x *= 0xbf58476d1ce4e5b9
		x ^= x >> 32
	}
	return x
}

//go:noinline
func quality(x uint64) uint64 {
	for range rounds / 3 * 16 {
		x ^= x >> 33
		x *= 0xff51afd7ed558ccd
		x ^= x >> 33
		x *= 0xc4ceb9fe1a85ec53
		x ^= x >> 33
	}
	return x
}
