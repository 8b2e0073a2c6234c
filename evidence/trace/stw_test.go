package trace

import (
	"io"
	"runtime"
	"runtime/pprof"
	"strings"
	"sync"
	"testing"
	"time"
)

var bigSrc, bigDst []byte

// copyAtOnce is one runtime.memmove of the whole buffer: not preemptible.
//
//go:noinline
func copyAtOnce(dst, src []byte) { copy(dst, src) }

// copyInChunks calls a function per 64 KiB chunk, whose prologue is a
// preemption point.
//
//go:noinline
func copyInChunks(dst, src []byte) {
	for off := 0; off < len(src); off += 64 << 10 {
		copyAtOnce(dst[off:off+64<<10], src[off:])
	}
}

// collectDuringCopies runs copyFn over a 128 MiB buffer in a loop on one
// goroutine while another forces collections: each one's stop-the-world
// must wait for the copying goroutine to stop. A CPU profile runs with the
// trace, as perfdoctor collect takes them.
func collectDuringCopies(t *testing.T, copyFn func(dst, src []byte)) *Summary {
	if bigSrc == nil {
		bigSrc, bigDst = make([]byte, 128<<20), make([]byte, 128<<20)
		for i := 0; i < 4096; i++ {
			bigSrc[i] = byte(i * 7)
		}
		for n := 4096; n < len(bigSrc); n *= 2 {
			copy(bigSrc[n:], bigSrc[:n])
		}
		copy(bigDst, bigSrc)
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	if err := pprof.StartCPUProfile(io.Discard); err != nil {
		t.Fatal(err)
	}
	defer pprof.StopCPUProfile()
	return summarize(t, record(t, func() {
		var wg sync.WaitGroup
		stop := make(chan struct{})
		started := make(chan struct{})
		wg.Go(func() {
			close(started)
			for {
				select {
				case <-stop:
					return
				default:
					copyFn(bigDst, bigSrc)
				}
			}
		})
		<-started
		for range 4 {
			runtime.GC()
		}
		close(stop)
		wg.Wait()
	}))
}

func TestHoldoutNamesANonPreemptibleCopy(t *testing.T) {
	if testing.Short() {
		t.Skip("copies 256 MiB buffers")
	}
	s := collectDuringCopies(t, copyAtOnce)
	if len(s.GC.Holdouts) == 0 {
		t.Fatalf("no holdout in %d stop-the-world pauses (%v)", s.GC.STW.Count, s.GC.STW)
	}
	h := s.GC.Holdouts[0]
	var funcs []string
	for _, f := range h.Stack {
		funcs = append(funcs, f.Func)
	}
	// The copy's remaining CPU time is what each pause waits for: the CPU
	// profile sees the goroutine running through the pauses.
	if !strings.Contains(strings.Join(funcs, " "), "collectDuringCopies") || h.Max < holdoutMinPause || h.CPUSamples == 0 || s.CPUSamples == 0 {
		t.Errorf("holdout %+v", h)
	}
}

// The copying goroutine runs whole copies without yielding, whether or not
// a pause falls in them: the trace shows runs past the runtime's 10 ms
// request to yield, with the CPU samples that prove it ran.
func TestLongRunNamesANonPreemptibleCopy(t *testing.T) {
	if testing.Short() {
		t.Skip("copies 256 MiB buffers")
	}
	s := copyFor(t, copyAtOnce, 300*time.Millisecond)
	for _, r := range s.GC.LongRuns {
		var funcs []string
		for _, f := range r.Stack {
			funcs = append(funcs, f.Func)
		}
		if strings.Contains(strings.Join(funcs, " "), "copyFor") && r.Max >= longRunMin && r.CPUSamples > 0 {
			return
		}
	}
	t.Errorf("no long run of the copying goroutine: %+v", s.GC.LongRuns)
}

// copyFor runs copyFn over the 128 MiB buffers in a loop for d, with no
// collection forced, under a CPU profile.
func copyFor(t *testing.T, copyFn func(dst, src []byte), d time.Duration) *Summary {
	collectDuringCopies(t, func(_, _ []byte) {}) // allocates the buffers
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	if err := pprof.StartCPUProfile(io.Discard); err != nil {
		t.Fatal(err)
	}
	defer pprof.StopCPUProfile()
	return summarize(t, record(t, func() {
		deadline := time.Now().Add(d)
		var wg sync.WaitGroup
		wg.Go(func() {
			for time.Now().Before(deadline) {
				copyFn(bigDst, bigSrc)
			}
		})
		wg.Wait()
	}))
}

func TestChunkedCopyHoldsNoPause(t *testing.T) {
	if testing.Short() {
		t.Skip("copies 256 MiB buffers")
	}
	// A pause can still wait for a thread the OS took off the CPU on a
	// loaded machine, but the goroutine does not run through it: a chunk
	// ends within microseconds of getting a CPU back.
	s := collectDuringCopies(t, copyInChunks)
	for _, h := range s.GC.Holdouts {
		if h.CPUSamples > 1 {
			t.Errorf("a chunked copy ran through %d samples of pauses: %+v", h.CPUSamples, h)
		}
	}
}
