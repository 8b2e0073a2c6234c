// Package r4fanout is a service with a small per-request fan-out run under
// an oversubscribed GOMAXPROCS: 64 Ps on a machine with 2 CPUs, as a
// container image that pins GOMAXPROCS for its build host does. Each
// request starts Shards goroutines (one per shard of a price index), waits
// for them and merges their answers. The goroutines are few and cheap; what
// costs is that every one of them wakes a thread to look for work over 64
// Ps, which finds nothing and sleeps again. The scheduler time is caused by
// the oversubscription, not by the fan-out, so the zero-code fix comes
// first and goroutine churn, if reported, ranks below it.
//
// The handler code is the same in both variants; only the environment
// differs, where an outside observer sees it (/proc/PID/environ):
//
//   - Bad: GOMAXPROCS=BadProcs.
//   - Fixed: GOMAXPROCS unset, so Go >= 1.25 uses the CPUs the process may
//     use (the cgroup quota when there is one).
//
// Both variants run with GOGC=GOGC, as A3 does: with 64 Ps every GC cycle
// starts a mark worker on each idle P, and with the default GOGC the GC
// took 29-51% of the bad variant's CPU (7.6% of the fixed variant's) and
// outranked everything else. That cost is caused by the oversubscription
// too, but this case is about who owns the scheduler's time.
//
// This is "any Go service": it imports nothing from perfdoctor.
package r4fanout

import (
	"fmt"
	"net/http"
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

const (
	// BadProcs is the bad variant's GOMAXPROCS: 32x the 2 CPUs of the
	// casebook's machine.
	BadProcs = 64
	// Shards is the fan-out: goroutines per request.
	Shards = 3
	// shardSize is how many index entries each shard holds.
	shardSize = 1 << 14
	// probes is how many entries a shard goroutine looks at (a few µs).
	probes = 160
	// GOGC is both variants' GC setting.
	GOGC = 2000
)

// Env returns the variant's Go runtime environment ("" means unset).
func Env(variant string) (map[string]string, error) {
	if err := check(variant); err != nil {
		return nil, err
	}
	env := map[string]string{"GOMAXPROCS": "", "GOGC": strconv.Itoa(GOGC)}
	if variant == Bad {
		env["GOMAXPROCS"] = strconv.Itoa(BadProcs)
	}
	return env, nil
}

// Setup gives the process the variant's environment (procenv.Setup): with
// reexec it re-executes the process when the environment differs, so call
// it before any listener is opened.
func Setup(variant string, reexec bool) (restore func(), err error) {
	env, err := Env(variant)
	if err != nil {
		return nil, err
	}
	return procenv.Setup(env, reexec)
}

func check(variant string) error {
	if variant != Bad && variant != Fixed {
		return fmt.Errorf("r4fanout: unknown variant %q (want %q or %q)", variant, Bad, Fixed)
	}
	return nil
}

// Handler is the price service: a sharded index of prices.
type Handler struct {
	shards [Shards][]uint32
	seq    atomic.Uint64
}

// NewHandler builds the index. Both variants use the same code.
func NewHandler(variant string) (*Handler, error) {
	if err := check(variant); err != nil {
		return nil, err
	}
	h := &Handler{}
	x := uint64(7)
	for s := range h.shards {
		h.shards[s] = make([]uint32, shardSize)
		for i := range h.shards[s] {
			x = x*6364136223846793005 + 1442695040888963407
			h.shards[s][i] = uint32(x >> 40)
		}
	}
	return h, nil
}

// ServeHTTP asks every shard for its best price for the request's item,
// one goroutine per shard, and answers with the lowest.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	item := h.seq.Add(1)
	var best [Shards]uint32
	var wg sync.WaitGroup
	for s := range Shards {
		wg.Add(1)
		go func() {
			defer wg.Done()
			best[s] = lowest(h.shards[s], item)
		}()
	}
	wg.Wait()
	low := best[0]
	for _, p := range best[1:] {
		low = min(low, p)
	}
	out := strconv.AppendUint([]byte("price="), uint64(low), 10)
	w.Header().Set("Content-Type", "text/plain")
	w.Write(append(out, '\n'))
}

// lowest probes a shard's entries for item and returns the lowest price.
//
//go:noinline
func lowest(shard []uint32, item uint64) uint32 {
	low := ^uint32(0)
	x := item*0x9e3779b97f4a7c15 | 1
	for range probes {
		x ^= x >> 27
		x *= 0x94d049bb133111eb
		low = min(low, shard[x%shardSize]^uint32(item))
	}
	return low
}
