package evidence

import (
	"bytes"
	"runtime"
	"runtime/pprof"
	"testing"
	"time"

	"github.com/google/pprof/profile"
)

var kept [][]byte

//go:noinline
func allocAtStartup() {
	for range 20_000 {
		kept = append(kept, make([]byte, 64))
	}
}

//go:noinline
func allocInWindow() {
	for range 5_000 {
		kept = append(kept, make([]byte, 64))
	}
}

func memProfile(t *testing.T, name string) *profile.Profile {
	t.Helper()
	runtime.GC()
	runtime.GC() // a profile is as of the last completed cycle
	var buf bytes.Buffer
	if err := pprof.Lookup(name).WriteTo(&buf, 0); err != nil {
		t.Fatal(err)
	}
	p, err := profile.Parse(&buf)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestWindowAllocsLeaveStartupOut(t *testing.T) {
	defer func(rate int) { runtime.MemProfileRate = rate; kept = nil }(runtime.MemProfileRate)
	runtime.MemProfileRate = 1
	allocAtStartup()
	start := memProfile(t, "heap")
	time.Sleep(10 * time.Millisecond) // distinct profile times
	allocInWindow()
	end := memProfile(t, "allocs")

	objectsAt := func(p *profile.Profile, fn string) int64 {
		st := NewStacks(p, "alloc_objects")
		return int64(st.ShareWhere(st.Has(FuncPrefix(fn))) * float64(st.Total))
	}
	ev := &Evidence{Profiles: map[Kind]*profile.Profile{HeapStart: start, Allocs: end}}
	win, inWindow := ev.WindowAllocs()
	if !inWindow {
		t.Fatal("window allocations not derived from the start heap")
	}
	const pkg = "github.com/perfdoctor/perfdoctor/evidence."
	if n := objectsAt(win, pkg+"allocInWindow"); n < 4_000 {
		t.Errorf("allocInWindow: %d objects in the window, want ~5000", n)
	}
	if n := objectsAt(win, pkg+"allocAtStartup"); n != 0 {
		t.Errorf("allocAtStartup: %d objects in the window, want 0", n)
	}
	if n := objectsAt(end, pkg+"allocAtStartup"); n < 16_000 {
		t.Errorf("cumulative profile: allocAtStartup %d objects, want ~20000", n)
	}

	alone := &Evidence{Profiles: map[Kind]*profile.Profile{Allocs: end}}
	if p, inWindow := alone.WindowAllocs(); inWindow || p != end {
		t.Error("without a start heap, want the cumulative profile")
	}
}
