package trace

import (
	"runtime"
	"strings"
	"sync"
	"testing"
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

// collectDuringCopies runs copyFn over a 64 MiB buffer in a loop on one
// goroutine while another forces collections: each one's stop-the-world
// must wait for the copying goroutine to stop.
func collectDuringCopies(t *testing.T, copyFn func(dst, src []byte)) *Summary {
	if bigSrc == nil {
		bigSrc, bigDst = make([]byte, 64<<20), make([]byte, 64<<20)
		for i := 0; i < 4096; i++ {
			bigSrc[i] = byte(i * 7)
		}
		for n := 4096; n < len(bigSrc); n *= 2 {
			copy(bigSrc[n:], bigSrc[:n])
		}
		copy(bigDst, bigSrc)
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
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
	if !strings.Contains(strings.Join(funcs, " "), "collectDuringCopies") || h.Max < holdoutMinPause {
		t.Errorf("holdout %+v", h)
	}
}

func TestChunkedCopyHoldsNoPause(t *testing.T) {
	if testing.Short() {
		t.Skip("copies 256 MiB buffers")
	}
	// A pause can still wait for a thread the OS took off the CPU on a
	// loaded machine, but not pause after pause.
	s := collectDuringCopies(t, copyInChunks)
	for _, h := range s.GC.Holdouts {
		if h.Pauses*2 >= int(s.GC.STW.Count) {
			t.Errorf("a chunked copy held %d of %d pauses: %+v", h.Pauses, s.GC.STW.Count, h)
		}
	}
}

