package agent

import (
	"testing"
	"time"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// feeder builds cumulative samples from per-interval readings, so tests
// state what each interval looked like.
type feeder struct {
	w   *watcher
	s   Sample
	n   int
	dt  time.Duration
	gcS float64
}

func newFeeder(tr Triggers) *feeder {
	f := &feeder{w: newWatcher(tr), dt: 5 * time.Second}
	f.s = Sample{Time: t0, Goroutines: 100, RSSBytes: 100 << 20}
	f.w.observe(f.s) // origin
	return f
}

// step feeds one interval with the given CPU cores, goroutines, RSS and GC
// share (of 4 procs' worth of available CPU).
func (f *feeder) step(cores, goroutines, rss, gcShare float64) (Reading, *Trigger) {
	secs := f.dt.Seconds()
	f.s.Time = f.s.Time.Add(f.dt)
	f.s.CPUSeconds += cores * secs
	f.s.TotalCPUSeconds += 4 * secs
	f.s.GCCPUSeconds += gcShare * 4 * secs
	f.s.Goroutines, f.s.RSSBytes = goroutines, rss
	r, _, fire := f.w.observe(f.s)
	return r, fire
}

// steady warms the baseline with normal readings.
func (f *feeder) steady(n int) {
	for range n {
		if _, fire := f.step(0.2, 100, 100<<20, 0.02); fire != nil {
			panic("steady state fired: " + fire.Rule)
		}
	}
}

func testTriggers() Triggers {
	tr := DefaultTriggers(1 << 30)
	tr.Baseline = 6
	tr.Cooldown = time.Minute
	return tr
}

func TestReadingRates(t *testing.T) {
	f := newFeeder(testTriggers())
	r, _ := f.step(1.5, 42, 7<<20, 0.125)
	if !near(r.CPUCores, 1.5) || r.Goroutines != 42 || r.RSSBytes != 7<<20 || !near(r.GCShare, 0.125) {
		t.Fatalf("%+v", r)
	}
}

func near(a, b float64) bool { return a-b < 1e-9 && b-a < 1e-9 }

func TestTriggersFire(t *testing.T) {
	const mib = 1 << 20
	for _, tc := range []struct {
		name                string
		cores, gor, rss, gc float64
		signal              string
		relative            bool
	}{
		{"cpu relative", 0.9, 100, 100 * mib, 0.02, SignalCPU, true},
		{"goroutines relative", 0.2, 1500, 100 * mib, 0.02, SignalGoroutines, true},
		{"goroutines absolute", 0.2, 200_000, 100 * mib, 0.02, SignalGoroutines, false},
		{"rss relative", 0.2, 100, 250 * mib, 0.02, SignalRSS, true},
		{"rss absolute (90% of the cgroup limit)", 0.2, 100, 950 * mib, 0.02, SignalRSS, false},
		{"gc share relative", 0.2, 100, 100 * mib, 0.15, SignalGCShare, true},
		{"gc share absolute", 0.2, 100, 100 * mib, 0.30, SignalGCShare, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFeeder(testTriggers())
			f.steady(6)
			_, fire := f.step(tc.cores, tc.gor, tc.rss, tc.gc)
			if fire == nil {
				t.Fatal("did not fire")
			}
			if fire.Signal != tc.signal || (tc.relative && fire.Baseline == 0) {
				t.Fatalf("fired %+v, want %s", fire, tc.signal)
			}
			if fire.Rule == "" || fire.Value == 0 || fire.Reading.Time.IsZero() {
				t.Errorf("trigger lacks its numbers: %+v", fire)
			}
		})
	}
}

func TestTriggersDoNotFire(t *testing.T) {
	const mib = 1 << 20
	for _, tc := range []struct {
		name                string
		warm                int
		cores, gor, rss, gc float64
	}{
		{"cpu jump below min", 6, 0.45, 100, 100 * mib, 0.02},  // 2.25x but < 0.5 cores
		{"cpu below factor", 6, 0.55, 100, 100 * mib, 0.02},    // above min, 2.75x
		{"goroutines below min", 6, 0.2, 900, 100 * mib, 0.02}, // 9x but < 1000
		{"rss below factor", 6, 0.2, 100, 190 * mib, 0.02},
		{"gc share below min", 6, 0.2, 100, 100 * mib, 0.08}, // 4x but < 0.10
		{"baseline not warm", 3, 0.9, 1500, 250 * mib, 0.15}, // relative rules wait
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFeeder(testTriggers())
			f.steady(tc.warm)
			if _, fire := f.step(tc.cores, tc.gor, tc.rss, tc.gc); fire != nil {
				t.Fatalf("fired: %+v", fire)
			}
		})
	}
}

func TestCooldownAndAlso(t *testing.T) {
	f := newFeeder(testTriggers())
	f.steady(6)
	_, fire := f.step(2, 200_000, 100<<20, 0.30)
	if fire == nil || fire.Signal != SignalCPU || len(fire.Also) != 2 {
		t.Fatalf("first: %+v", fire)
	}
	// Within the minute's cooldown an absolute breach stays quiet.
	for range 11 {
		if _, fire := f.step(0.2, 200_000, 100<<20, 0.02); fire != nil {
			t.Fatalf("fired during cooldown: %+v", fire)
		}
	}
	// After it, the breach fires again.
	if _, fire := f.step(0.2, 200_000, 100<<20, 0.02); fire == nil || fire.Signal != SignalGoroutines {
		t.Fatalf("after cooldown: %+v", fire)
	}
}

func TestDisarmedThresholds(t *testing.T) {
	f := newFeeder(Triggers{Baseline: 2})
	f.steady(3)
	if _, fire := f.step(64, 1e6, 1<<40, 0.9); fire != nil {
		t.Fatalf("zero Triggers fired: %+v", fire)
	}
}
