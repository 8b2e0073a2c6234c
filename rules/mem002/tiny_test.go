package mem002

import (
	"bytes"
	"runtime"
	"runtime/pprof"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/pprof/profile"
)

// liveSet is the healthy service's whole retained state: about 1 MiB.
var liveSet = make([][]byte, 64)

var sink atomic.Pointer[[]byte]

// churn is a request path that allocates and drops buffers as fast as it
// can: with a 1 MiB live heap it runs hundreds of GC cycles a second.
func churn(stop *atomic.Bool) {
	for i := 0; !stop.Load(); i++ {
		b := make([]byte, 8<<10+i%(56<<10))
		sink.Store(&b)
		small := make([]*[64]byte, 64)
		for j := range small {
			small[j] = new([64]byte)
		}
		_ = small
	}
}

// snapshotNoGC is a heap profile as curl fetches it: as of the last GC the
// service ran by itself, no GC forced.
func snapshotNoGC(t *testing.T) *profile.Profile {
	var buf bytes.Buffer
	if err := pprof.Lookup("heap").WriteTo(&buf, 0); err != nil {
		t.Fatal(err)
	}
	p, err := profile.ParseData(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// tinyHeapSeries profiles a healthy service with a tiny heap and a very
// high GC rate every 50 ms for 2 s, and returns the profiles and the GC
// cycles per second.
func tinyHeapSeries(t *testing.T) ([]*profile.Profile, float64) {
	for i := range liveSet {
		liveSet[i] = make([]byte, 16<<10)
	}
	var stop atomic.Bool
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() { churn(&stop) })
	}
	var ms0, ms1 runtime.MemStats
	runtime.ReadMemStats(&ms0)
	start := time.Now()
	var series []*profile.Profile
	for range 40 {
		time.Sleep(50 * time.Millisecond)
		series = append(series, snapshotNoGC(t))
	}
	runtime.ReadMemStats(&ms1)
	stop.Store(true)
	wg.Wait()
	return series, float64(ms1.NumGC-ms0.NumGC) / time.Since(start).Seconds()
}
