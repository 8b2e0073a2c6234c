// Package testprof gives rule tests real profiles from the Go installed
// here (a workload profiled in-process) and small synthetic ones for exact
// thresholds.
package testprof

import (
	"bytes"
	"context"
	"os"
	"runtime"
	"runtime/pprof"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/pprof/profile"

	"github.com/perfdoctor/perfdoctor/evidence"
)

// cpuMu serialises CPU profiling: the runtime allows one profile at a time.
var cpuMu sync.Mutex

// CPU profiles work running on `workers` goroutines until the process has
// used cpuTime of CPU (so the sample count does not depend on how busy the
// machine is), or a minute has passed, and returns the profile.
func CPU(t testing.TB, cpuTime time.Duration, workers int, work func()) *profile.Profile {
	t.Helper()
	cpuMu.Lock()
	defer cpuMu.Unlock()
	var buf bytes.Buffer
	if err := pprof.StartCPUProfile(&buf); err != nil {
		t.Fatalf("start CPU profile: %v", err)
	}
	start := processCPU()
	deadline := time.Now().Add(time.Minute)
	var stop atomic.Bool
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				work()
			}
		}()
	}
	for processCPU()-start < cpuTime && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	stop.Store(true)
	wg.Wait()
	pprof.StopCPUProfile()
	p, err := profile.Parse(&buf)
	if err != nil {
		t.Fatalf("parse CPU profile: %v", err)
	}
	return p
}

func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// Allocs returns the process's allocs profile after running work n times.
func Allocs(t testing.TB, n int, work func()) *profile.Profile {
	t.Helper()
	old := runtime.MemProfileRate
	runtime.MemProfileRate = 4096
	defer func() { runtime.MemProfileRate = old }()
	for range n {
		work()
	}
	runtime.GC() // publish the allocation counts
	var buf bytes.Buffer
	if err := pprof.Lookup("allocs").WriteTo(&buf, 0); err != nil {
		t.Fatalf("allocs profile: %v", err)
	}
	p, err := profile.Parse(&buf)
	if err != nil {
		t.Fatalf("parse allocs profile: %v", err)
	}
	return p
}

// Stack is one synthetic sample: a value and its frames, leaf first, and
// the thread it was on (perf's tid label) when TID is set.
type Stack struct {
	Value int64
	Funcs []string
	TID   int64
}

// Build makes a CPU profile (samples/count, cpu/nanoseconds at 100 Hz) from
// synthetic stacks; Value is a sample count.
func Build(stacks ...Stack) *profile.Profile {
	p := &profile.Profile{
		SampleType:    []*profile.ValueType{{Type: "samples", Unit: "count"}, {Type: "cpu", Unit: "nanoseconds"}},
		PeriodType:    &profile.ValueType{Type: "cpu", Unit: "nanoseconds"},
		Period:        10_000_000,
		DurationNanos: int64(10 * time.Second),
	}
	addStacks(p, stacks, func(v int64) []int64 { return []int64{v, v * 10_000_000} })
	return p
}

// BuildOffCPU makes an off-CPU profile over 10 s, as perf's scheduler
// events give it (offcpu/nanoseconds), from synthetic stacks; Value is
// nanoseconds off the CPU.
func BuildOffCPU(stacks ...Stack) *profile.Profile {
	p := &profile.Profile{
		SampleType:    []*profile.ValueType{{Type: "offcpu", Unit: "nanoseconds"}},
		PeriodType:    &profile.ValueType{Type: "offcpu", Unit: "nanoseconds"},
		DurationNanos: int64(10 * time.Second),
	}
	addStacks(p, stacks, func(v int64) []int64 { return []int64{v} })
	return p
}

// addStacks adds the stacks to p as samples with the given values, one
// function and location per distinct name.
func addStacks(p *profile.Profile, stacks []Stack, values func(int64) []int64) {
	funcs := map[string]*profile.Function{}
	locs := map[string]*profile.Location{}
	for _, s := range stacks {
		var sl []*profile.Location
		for _, name := range s.Funcs {
			loc := locs[name]
			if loc == nil {
				fn := &profile.Function{ID: uint64(len(funcs) + 1), Name: name, SystemName: name, Filename: "synthetic.go"}
				funcs[name] = fn
				p.Function = append(p.Function, fn)
				loc = &profile.Location{ID: uint64(len(locs) + 1), Line: []profile.Line{{Function: fn, Line: int64(len(locs) + 10)}}}
				locs[name] = loc
				p.Location = append(p.Location, loc)
			}
			sl = append(sl, loc)
		}
		sample := &profile.Sample{Location: sl, Value: values(s.Value)}
		if s.TID != 0 {
			sample.NumLabel = map[string][]int64{"tid": {s.TID}}
		}
		p.Sample = append(p.Sample, sample)
	}
}

// Evidence wraps profiles in an Evidence, as diagnose would load them.
func Evidence(profiles map[evidence.Kind]*profile.Profile) *evidence.Evidence {
	return &evidence.Evidence{Sources: []string{"test"}, Profiles: profiles}
}

// WithTrace is ev with the execution trace at path read into it, as
// evidence.Load reads one (an unreadable trace gives the reason Trace
// returns).
func WithTrace(t testing.TB, ev *evidence.Evidence, path string) *evidence.Evidence {
	t.Helper()
	tr, err := evidence.Load(context.Background(), evidence.LoadOptions{}, path)
	if err != nil {
		t.Fatal(err)
	}
	b := tr.Derive().Sources(ev.Sources...)
	for k, p := range ev.Profiles {
		b.Profile(k, p)
	}
	return b.Metrics(ev.MetricsStart, ev.MetricsEnd).System(ev.SystemStart, ev.SystemEnd).Evidence()
}

// Read parses the profile file at path (gzipped or not).
func Read(t testing.TB, path string) *profile.Profile {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p, err := profile.Parse(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return p
}
