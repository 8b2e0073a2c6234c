package mem003

import (
	"bytes"
	"runtime"
	"runtime/pprof"
	rtrace "runtime/trace"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/perfdoctor/perfdoctor/facts"

	"github.com/google/pprof/profile"

	"github.com/perfdoctor/perfdoctor/evidence"
	"github.com/perfdoctor/perfdoctor/evidence/trace"
	"github.com/perfdoctor/perfdoctor/formats/goroutines"
	"github.com/perfdoctor/perfdoctor/rules"
)

// The tests observe this test process itself: real goroutine profiles,
// a real goroutine dump and a real execution trace around goroutines that
// leak or queue.

func goroutineProfile(t *testing.T) *profile.Profile {
	t.Helper()
	var b bytes.Buffer
	if err := pprof.Lookup("goroutine").WriteTo(&b, 0); err != nil {
		t.Fatal(err)
	}
	p, err := profile.Parse(&b)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func dump(t *testing.T) *goroutines.Dump {
	t.Helper()
	var b bytes.Buffer
	pprof.Lookup("goroutine").WriteTo(&b, 2)
	d, err := goroutines.Parse(&b)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// observe takes the start profile, runs act under an execution trace and
// returns the evidence of the window.
func observe(t *testing.T, act func()) *evidence.Evidence {
	t.Helper()
	start := goroutineProfile(t)
	var tr bytes.Buffer
	if err := rtrace.Start(&tr); err != nil {
		t.Skipf("trace already running: %v", err)
	}
	act()
	rtrace.Stop()
	sum, err := trace.Summarize(&tr)
	if err != nil {
		t.Fatal(err)
	}
	ev := evidence.NewBuilder().Evidence()
	ev.Profiles = map[evidence.Kind]*profile.Profile{
		evidence.GoroutineStart: start,
		evidence.Goroutine:      goroutineProfile(t),
	}
	ev.TraceSummary = sum
	ev.GoroutineStacks = dump(t)
	return ev
}

func run(ev *evidence.Evidence) rules.Result {
	return rules.Run(facts.New(ev), []*rules.Rule{Rule})
}

// leakySend is the casebook's bug: the caller stopped waiting, so the send
// blocks forever. release lets the test end the goroutines.
func leakySend(ch chan int) { ch <- 1 }

func startLeak(n int) (release func()) {
	chans := make([]chan int, n)
	for i := range chans {
		chans[i] = make(chan int)
		go leakySend(chans[i])
	}
	return func() {
		for _, ch := range chans {
			<-ch
		}
	}
}

func waitParked(t *testing.T, n int) {
	t.Helper()
	for range 200 {
		if runtime.NumGoroutine() >= n {
			time.Sleep(20 * time.Millisecond)
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestLeakInferredFromGrowthAndTrace(t *testing.T) {
	var release func()
	base := runtime.NumGoroutine()
	ev := observe(t, func() {
		release = startLeak(300)
		waitParked(t, base+300)
	})
	defer release()
	res := run(ev)
	if len(res.Findings) != 1 {
		t.Fatalf("want one finding, got %+v (not checked %+v)", res.Findings, res.NotChecked)
	}
	f := res.Findings[0]
	if f.Class != "goroutine-leak" || f.Severity != rules.High {
		t.Errorf("finding %s %s, want goroutine-leak high", f.Class, f.Severity)
	}
	if !strings.Contains(f.Summary, "chan send") || !strings.Contains(f.Summary, "leakySend") {
		t.Errorf("summary does not name the operation and the function: %s", f.Summary)
	}
	if !strings.Contains(f.Fix, "buffer of 1") || !strings.Contains(f.Fix, "startLeak") || !strings.Contains(f.Fix, "synctest") {
		t.Errorf("fix does not name the go statement and the pattern: %s", f.Fix)
	}
	if len(f.Locations) < 2 || f.Locations[1].Role != "go statement" || f.Locations[1].Function == "" {
		t.Errorf("locations: %+v", f.Locations)
	}
}

// A queue that drains: goroutines wait for one of two workers, which serve
// them while the trace runs. They pile up, but they are woken.
func TestDrainingBacklogIsNotALeak(t *testing.T) {
	sem := make(chan struct{}, 2)
	var wg sync.WaitGroup
	ev := observe(t, func() {
		for range 400 {
			wg.Add(1)
			go queued(sem, &wg)
		}
		time.Sleep(150 * time.Millisecond) // about 300 are still waiting
	})
	wg.Wait()
	res := run(ev)
	if len(res.Findings) != 0 {
		t.Errorf("a draining queue was called a leak: %+v", res.Findings[0])
	}
}

func queued(sem chan struct{}, wg *sync.WaitGroup) {
	defer wg.Done()
	sem <- struct{}{}
	time.Sleep(time.Millisecond)
	<-sem
}

// asLeakProfile turns a goroutine profile into what /debug/pprof/goroutineleak
// serves: the same format under its own sample type.
func asLeakProfile(p *profile.Profile, keep func(*profile.Sample) bool) *profile.Profile {
	c := p.Copy()
	c.SampleType[0].Type = "goroutineleak"
	var kept []*profile.Sample
	for _, s := range c.Sample {
		if keep(s) {
			kept = append(kept, s)
		}
	}
	c.Sample = kept
	return c
}

func hasFunc(name string) func(*profile.Sample) bool {
	return func(s *profile.Sample) bool {
		for _, l := range s.Location {
			for _, ln := range l.Line {
				if strings.HasSuffix(ln.Function.Name, name) {
					return true
				}
			}
		}
		return false
	}
}

func TestLeakProfileIsProof(t *testing.T) {
	release := startLeak(20)
	defer release()
	waitParked(t, 20)
	end := goroutineProfile(t)
	ev := evidence.NewBuilder().Evidence()
	ev.Profiles = map[evidence.Kind]*profile.Profile{
		evidence.Goroutine:     end,
		evidence.GoroutineLeak: asLeakProfile(end, hasFunc(".leakySend")),
	}
	res := run(ev)
	if len(res.Findings) != 1 || res.Findings[0].Severity != rules.Medium || !strings.Contains(res.Findings[0].Summary, "proven") {
		t.Fatalf("20 proven leaked goroutines, no growth: want one medium finding, got %+v", res.Findings)
	}
	// An empty leak profile overrules growth: the runtime proved none leaked.
	ev.Profiles[evidence.GoroutineStart] = goroutineProfile(t)
	ev.Profiles[evidence.GoroutineLeak] = asLeakProfile(end, func(*profile.Sample) bool { return false })
	if res := run(ev); len(res.Findings) != 0 {
		t.Errorf("empty leak profile: %+v", res.Findings)
	}
}

func TestRealLeakProfile(t *testing.T) {
	lp := pprof.Lookup("goroutineleak")
	if lp == nil {
		t.Skipf("%s has no goroutineleak profile (Go 1.27, or GOEXPERIMENT=goroutineleakprofile)", runtime.Version())
	}
	for range 150 { // channels only the goroutines hold: provably leaked
		go leakySend(make(chan int))
	}
	waitParked(t, 150)
	var b bytes.Buffer
	if err := lp.WriteTo(&b, 0); err != nil {
		t.Fatal(err)
	}
	leak, err := profile.Parse(&b)
	if err != nil {
		t.Fatal(err)
	}
	ev := evidence.NewBuilder().Evidence()
	ev.Profiles = map[evidence.Kind]*profile.Profile{evidence.Goroutine: goroutineProfile(t), evidence.GoroutineLeak: leak}
	res := run(ev)
	if len(res.Findings) == 0 || res.Findings[0].Severity != rules.High {
		t.Fatalf("150 leaked goroutines: %+v", res.Findings)
	}
}

func TestNeedsAStartOrLeakProfile(t *testing.T) {
	ev := evidence.NewBuilder().Evidence()
	ev.Profiles = map[evidence.Kind]*profile.Profile{evidence.Goroutine: goroutineProfile(t)}
	res := run(ev)
	if len(res.Findings) != 0 || len(res.NotChecked) != 1 || !strings.Contains(res.NotChecked[0].Reason, "start of the window") {
		t.Errorf("want not checked, got %+v %+v", res.Findings, res.NotChecked)
	}
}

// Without the goroutine dump (skipped for many goroutines) the trace names
// the go statement.
func TestGoStatementFromTheTrace(t *testing.T) {
	var release func()
	base := runtime.NumGoroutine()
	ev := observe(t, func() {
		release = startLeak(300)
		waitParked(t, base+300)
	})
	defer release()
	ev.GoroutineStacks = nil
	res := run(ev)
	if len(res.Findings) != 1 {
		t.Fatalf("%+v", res.Findings)
	}
	f := res.Findings[0]
	if len(f.Locations) < 2 || !strings.HasSuffix(f.Locations[1].Function, ".startLeak") || f.Locations[1].Line == 0 {
		t.Errorf("go statement not named from the trace: %+v", f.Locations)
	}
}
