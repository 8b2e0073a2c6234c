package agent

import (
	"math"
	"strings"
	"testing"
	"time"
)

// fakeRuntime stands in for the process's runtime settings.
type fakeRuntime struct {
	env      map[string]string
	gogc     int
	memLimit int64
	procs    int
	ncpu     int
	live     uint64
	calls    []string
}

func newFake() *fakeRuntime {
	return &fakeRuntime{env: map[string]string{}, gogc: 100, memLimit: math.MaxInt64, procs: 8, ncpu: 8}
}

func (f *fakeRuntime) ctl() runtimeCtl {
	return runtimeCtl{
		getenv: func(k string) string { return f.env[k] },
		setGCPercent: func(v int) int {
			old := f.gogc
			f.gogc = v
			f.calls = append(f.calls, "SetGCPercent")
			return old
		},
		gcPercent: func() int { return f.gogc },
		setMemoryLimit: func(v int64) int64 {
			old := f.memLimit
			if v >= 0 {
				f.memLimit = v
				f.calls = append(f.calls, "SetMemoryLimit")
			}
			return old
		},
		gomaxprocs: func(n int) int {
			old := f.procs
			if n > 0 {
				f.procs = n
				f.calls = append(f.calls, "GOMAXPROCS")
			}
			return old
		},
		setDefaultProc: func() { f.procs = f.ncpu; f.calls = append(f.calls, "SetDefaultGOMAXPROCS") },
		numCPU:         func() int { return f.ncpu },
		heapLive:       func() uint64 { return f.live },
	}
}

func mustLimits(t *testing.T, name string) *Limits {
	t.Helper()
	l, err := readLimits(fixture(name))
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func TestMemoryLimitFromCgroup(t *testing.T) {
	for _, name := range []string{"v1", "v2"} {
		t.Run(name, func(t *testing.T) {
			f := newFake()
			lim := mustLimits(t, name)
			d := decideMemoryLimit(f.ctl(), lim, 0.9)
			want := int64(float64(lim.MemoryBytes) * 0.9)
			if !d.Applied || f.memLimit != want || d.GOMEMLIMIT != want {
				t.Fatalf("decision %+v, limit %d; want %d applied", d, f.memLimit, want)
			}
			if !strings.Contains(d.Reason, lim.MemoryFrom) {
				t.Errorf("reason %q does not name the binding cgroup %q", d.Reason, lim.MemoryFrom)
			}
		})
	}
	t.Run("env set", func(t *testing.T) {
		f := newFake()
		f.env["GOMEMLIMIT"] = "1GiB"
		if d := decideMemoryLimit(f.ctl(), mustLimits(t, "v2"), 0.9); d.Applied || len(f.calls) > 0 {
			t.Fatalf("changed a GOMEMLIMIT set in the environment: %+v", d)
		}
	})
	t.Run("program set", func(t *testing.T) {
		f := newFake()
		f.memLimit = 100 << 20
		if d := decideMemoryLimit(f.ctl(), mustLimits(t, "v2"), 0.9); d.Applied || f.memLimit != 100<<20 {
			t.Fatalf("changed a programmatic limit: %+v", d)
		}
	})
	t.Run("no limit", func(t *testing.T) {
		f := newFake()
		if d := decideMemoryLimit(f.ctl(), mustLimits(t, "v2-none"), 0.9); d.Applied || f.memLimit != math.MaxInt64 {
			t.Fatalf("derived a limit from none: %+v", d)
		}
	})
}

func TestTuneGOGCFormula(t *testing.T) {
	const mib = 1 << 20
	for _, tc := range []struct {
		target, live uint64
		want         int
	}{
		{700 * mib, 100 * mib, 500}, // (7-1)*100 = 600, clamped to 500
		{700 * mib, 200 * mib, 250},
		{700 * mib, 350 * mib, 100},
		{700 * mib, 600 * mib, 100}, // would be 16: clamped to the floor
		{700 * mib, 0, 500},         // before the first GC: floored at 4 MiB live
	} {
		if got := tuneGOGC(tc.target, tc.live, 100, 500); got != tc.want {
			t.Errorf("tuneGOGC(%d MiB, %d MiB) = %d, want %d", tc.target/mib, tc.live/mib, got, tc.want)
		}
	}
}

// The tuner under a simulated 1 GiB cgroup (the v2 fixture): GOGC high
// while the heap is small, backing off as it grows, steady in between, and
// restored on the way out.
func TestGOGCTunerBacksOff(t *testing.T) {
	f := newFake()
	o := Options{GOGCTuner: true}
	o.setDefaults()
	tu, d := newGOGCTuner(f.ctl(), mustLimits(t, "v2"), &o)
	if tu == nil || !d.Active {
		t.Fatalf("tuner not armed: %+v", d)
	}
	const mib = 1 << 20
	limit := float64(1 << 30)
	target := uint64(limit * 0.7) // 716.8 MiB
	steps := []struct {
		live    uint64
		gogc    int
		applied bool
	}{
		{50 * mib, 500, true},
		{100 * mib, 500, false}, // 616 -> clamped, unchanged
		{200 * mib, 258, true},
		{205 * mib, 258, false}, // 249: within 10%, left alone
		{400 * mib, 100, true},  // 79 -> floor
		{900 * mib, 100, false},
	}
	for i, s := range steps {
		f.live = s.live
		d := tu.evaluate(time.Now())
		if d.GOGC != s.gogc || d.Applied != s.applied || f.gogc != s.gogc || d.Target != target {
			t.Fatalf("step %d live %d MiB: %+v (runtime GOGC %d); want GOGC %d applied %v", i, s.live/mib, d, f.gogc, s.gogc, s.applied)
		}
	}
	tu.restore()
	if f.gogc != 100 {
		t.Fatalf("restore left GOGC %d", f.gogc)
	}
}

func TestGOGCTunerStandsAside(t *testing.T) {
	o := Options{GOGCTuner: true}
	o.setDefaults()
	f := newFake()
	f.env["GOGC"] = "200"
	if tu, d := newGOGCTuner(f.ctl(), mustLimits(t, "v2"), &o); tu != nil || d.Active || !strings.Contains(d.Reason, "environment") {
		t.Errorf("GOGC env: %+v", d)
	}
	f = newFake()
	if tu, d := newGOGCTuner(f.ctl(), mustLimits(t, "v2-none"), &o); tu != nil || !strings.Contains(d.Reason, "no memory limit") {
		t.Errorf("no limit: %+v", d)
	}
	// Without a cgroup limit it tunes against a GOMEMLIMIT set by hand.
	f = newFake()
	f.memLimit = 1 << 30
	if tu, d := newGOGCTuner(f.ctl(), nil, &o); tu == nil || d.Limit != 1<<30 {
		t.Errorf("GOMEMLIMIT only: %+v", d)
	}
}

func TestGOMAXPROCSCheck(t *testing.T) {
	t.Run("nested v2 report only", func(t *testing.T) {
		f := newFake() // 8 CPUs, GOMAXPROCS 8; pod allows 1.5 cores, the leaf none
		d := checkProcs(f.ctl(), mustLimits(t, "v2"), false, false)
		if d.Recommended != 2 || d.Applied || f.procs != 8 || d.CPULimitFrom != "/kubepods.slice/pod1" || d.LeafCores != 0 {
			t.Fatalf("%+v", d)
		}
		if !strings.Contains(d.Reason, "recommend 2") {
			t.Errorf("reason %q", d.Reason)
		}
	})
	t.Run("nested v1 set", func(t *testing.T) {
		f := newFake()
		d := checkProcs(f.ctl(), mustLimits(t, "v1"), true, false)
		if d.Recommended != 2 || !d.Applied || f.procs != 2 {
			t.Fatalf("%+v procs %d", d, f.procs)
		}
	})
	t.Run("env wins", func(t *testing.T) {
		f := newFake()
		f.env["GOMAXPROCS"] = "8"
		if d := checkProcs(f.ctl(), mustLimits(t, "v1"), true, false); d.Applied || f.procs != 8 {
			t.Fatalf("%+v", d)
		}
	})
	t.Run("leaf already right", func(t *testing.T) {
		f := newFake()
		f.procs = 4 // the runtime followed the leaf's 4 cores
		if d := checkProcs(f.ctl(), mustLimits(t, "v2-leaf"), true, false); d.Applied || d.Recommended != 4 {
			t.Fatalf("%+v", d)
		}
	})
	t.Run("no limit", func(t *testing.T) {
		f := newFake()
		if d := checkProcs(f.ctl(), mustLimits(t, "v2-none"), true, false); d.Applied || d.Recommended != 8 {
			t.Fatalf("%+v", d)
		}
	})
	t.Run("follows the limit up when owned", func(t *testing.T) {
		f := newFake()
		f.procs = 2
		if d := checkProcs(f.ctl(), mustLimits(t, "v2-leaf"), true, true); !d.Applied || f.procs != 4 {
			t.Fatalf("%+v", d)
		}
		f.procs = 2
		if d := checkProcs(f.ctl(), mustLimits(t, "v2-leaf"), true, false); d.Applied || f.procs != 2 {
			t.Fatalf("raised a GOMAXPROCS it did not own: %+v", d)
		}
	})
}
