package bundle

import (
	"bytes"
	"errors"
	"runtime"
	"runtime/pprof"
	"strings"
	"testing"
	"time"
)

func TestParseMemStatsFromRealHeapProfile(t *testing.T) {
	runtime.GC()
	runtime.GC()
	var want runtime.MemStats
	runtime.ReadMemStats(&want)
	var buf bytes.Buffer
	if err := pprof.Lookup("heap").WriteTo(&buf, 1); err != nil {
		t.Fatal(err)
	}
	st, err := ParseMemStats(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if st.NumGC < uint64(want.NumGC) || st.NumGC == 0 {
		t.Errorf("NumGC = %d, want >= %d", st.NumGC, want.NumGC)
	}
	if st.HeapAlloc == 0 || st.NextGC == 0 || st.Mallocs == 0 || st.Source != "heap?debug=1" {
		t.Errorf("fields missing: %+v", st)
	}
	if len(st.Pauses) != int(min(st.NumGC, 256)) {
		t.Fatalf("%d pauses for NumGC %d", len(st.Pauses), st.NumGC)
	}
	last := st.Pauses[len(st.Pauses)-1]
	if last.End != st.LastGC {
		t.Errorf("newest pause ends at %d, LastGC is %d", last.End, st.LastGC)
	}
	if got := st.PausesSince(&RuntimeStats{}); len(got) != len(st.Pauses) {
		t.Errorf("PausesSince(start of process) = %d of %d pauses", len(got), len(st.Pauses))
	}
}

func TestParseMemStatsRejectsOtherText(t *testing.T) {
	for _, in := range []string{"", "<html>hello</html>", "heap profile: 1: 2 [3: 4] @ heap/1048576\n"} {
		if _, err := ParseMemStats(strings.NewReader(in)); !errors.Is(err, ErrNoMemStats) {
			t.Errorf("%q: err = %v, want ErrNoMemStats", in, err)
		}
	}
	if _, err := ParseMemStats(strings.NewReader("# runtime.MemStats\n# NumGC = many\n")); err == nil {
		t.Error("malformed number accepted")
	}
}

func TestOrderPausesUnrollsTheRing(t *testing.T) {
	ns := make([]uint64, 256)
	end := make([]uint64, 256)
	// 300 GCs: the newest (GC #300) sits at index (300+255)%256 = 43.
	for gc := uint64(1); gc <= 300; gc++ {
		i := (gc + 255) % 256
		ns[i], end[i] = gc, gc*10
	}
	p := orderPauses(ns, end, 300)
	if len(p) != 256 || p[0].Ns != 45 || p[255].Ns != 300 {
		t.Fatalf("got %d pauses, first %d last %d", len(p), p[0].Ns, p[len(p)-1].Ns)
	}
	if got := orderPauses(ns[:3], end[:3], 2); len(got) != 2 {
		t.Errorf("short ring: %v", got)
	}
}

func FuzzParseMemStats(f *testing.F) {
	var buf bytes.Buffer
	pprof.Lookup("heap").WriteTo(&buf, 1)
	f.Add(buf.String())
	f.Add("# runtime.MemStats\n# PauseNs = [1 2 3]\n# PauseEnd = [4 5]\n# NumGC = 7\n")
	f.Add("# runtime.MemStats\n# PauseNs = [\n")
	f.Fuzz(func(t *testing.T, s string) {
		st, err := ParseMemStats(strings.NewReader(s))
		if err == nil && len(st.Pauses) > 256 {
			t.Errorf("%d pauses", len(st.Pauses))
		}
	})
}

// The window's pauses are its cycles', by number: a start sample read late
// (its clock after cycles the end sample holds) loses none of them.
func TestPausesSinceCountsCycles(t *testing.T) {
	start := &RuntimeStats{Time: time.Unix(100, 0), NumGC: 2, LastGC: uint64(time.Unix(90, 0).UnixNano())}
	end := &RuntimeStats{NumGC: 5, Pauses: []Pause{
		{End: uint64(time.Unix(80, 0).UnixNano()), Ns: 1}, {End: uint64(time.Unix(90, 0).UnixNano()), Ns: 2}, // cycles 1, 2
		{End: uint64(time.Unix(99, 0).UnixNano()), Ns: 3}, // cycle 3, before the start sample's clock
		{End: uint64(time.Unix(101, 0).UnixNano()), Ns: 4}, {End: uint64(time.Unix(102, 0).UnixNano()), Ns: 5},
	}}
	got := end.PausesSince(start)
	if len(got) != 3 || got[0].Ns != 3 || got[2].Ns != 5 {
		t.Errorf("PausesSince = %+v", got)
	}
	if got := start.PausesSince(end); got != nil {
		t.Errorf("a later start: %+v", got)
	}
}
