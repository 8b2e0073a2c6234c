package evidence

import (
	"bytes"
	"runtime"
	"runtime/pprof"
	"sync"
	"testing"
	"time"

	"github.com/google/pprof/profile"
)

// blockProfile is this process's block profile after work ran with every
// blocking event recorded, as a delta over the work (what collect fetches
// with ?seconds=).
func blockProfile(t *testing.T, work func()) *profile.Profile {
	t.Helper()
	runtime.SetBlockProfileRate(1)
	defer runtime.SetBlockProfileRate(0)
	read := func() *profile.Profile {
		var buf bytes.Buffer
		if err := pprof.Lookup("block").WriteTo(&buf, 0); err != nil {
			t.Fatal(err)
		}
		p, err := profile.Parse(&buf)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	before := read()
	start := time.Now()
	work()
	after := read()
	before.Scale(-1)
	delta, err := profile.Merge([]*profile.Profile{after, before})
	if err != nil {
		t.Fatal(err)
	}
	delta.DurationNanos = time.Since(start).Nanoseconds()
	return delta
}

// waitForLock blocks on a mutex another goroutine holds for 20 ms.
func waitForLock() {
	var mu sync.Mutex
	mu.Lock()
	go func() { time.Sleep(20 * time.Millisecond); mu.Unlock() }()
	mu.Lock()
}

// waitForReply blocks on a channel another goroutine answers after 20 ms.
func waitForReply() {
	ch := make(chan int)
	go func() { time.Sleep(20 * time.Millisecond); ch <- 1 }()
	<-ch
}

func TestBlockWaitsBySite(t *testing.T) {
	p := blockProfile(t, func() {
		for range 3 {
			waitForLock()
			waitForReply()
		}
	})
	ev := &Evidence{Profiles: map[Kind]*profile.Profile{Block: p}}
	w, ok := ev.BlockWaits()
	if !ok {
		t.Fatal("no waits in the block profile")
	}
	got := map[string]BlockSite{}
	for _, s := range w.Sites {
		got[s.Where().Func] = s
	}
	lock, reply := got["github.com/perfdoctor/perfdoctor/evidence.waitForLock"], got["github.com/perfdoctor/perfdoctor/evidence.waitForReply"]
	if lock.Mechanism != "lock" || reply.Mechanism != "channel" || lock.Count < 3 || reply.Count < 3 {
		t.Fatalf("lock %+v\nreply %+v", lock, reply)
	}
	// Each waited about 3 x 20 ms; sleeping runs at least that long.
	if lock.Delay < 50*time.Millisecond || reply.Delay < 50*time.Millisecond || w.Window <= 0 || w.PerSecond(reply.Delay) <= 0 {
		t.Errorf("lock %v, reply %v over %v", lock.Delay, reply.Delay, w.Window)
	}
}

// A block profile of a service that never enabled it has no samples: no
// waits, rather than "nothing waited".
func TestEmptyBlockProfileIsNoEvidence(t *testing.T) {
	p := &profile.Profile{SampleType: []*profile.ValueType{{Type: "contentions", Unit: "count"}, {Type: "delay", Unit: "nanoseconds"}}}
	if _, ok := (&Evidence{Profiles: map[Kind]*profile.Profile{Block: p}}).BlockWaits(); ok {
		t.Error("an empty block profile gave waits")
	}
	if _, ok := (&Evidence{Profiles: map[Kind]*profile.Profile{}}).BlockWaits(); ok {
		t.Error("no block profile gave waits")
	}
}
