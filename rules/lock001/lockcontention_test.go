package lock001

import (
	"bytes"
	"crypto/sha256"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	rtrace "runtime/trace"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/perfdoctor/perfdoctor/facts"

	"github.com/google/pprof/profile"

	"github.com/perfdoctor/perfdoctor/bundle"
	"github.com/perfdoctor/perfdoctor/evidence"
	"github.com/perfdoctor/perfdoctor/internal/testprof"
	"github.com/perfdoctor/perfdoctor/rules"
)

// lockProfiles runs work on `workers` goroutines with mutex and block
// profiling on and returns the delta profiles over the run, as
// /debug/pprof/mutex?seconds=N would.
func lockProfiles(t *testing.T, workers int, work func(worker int)) (mutex, block *profile.Profile) {
	t.Helper()
	oldFrac := runtime.SetMutexProfileFraction(1)
	runtime.SetBlockProfileRate(1)
	defer func() {
		runtime.SetMutexProfileFraction(oldFrac)
		runtime.SetBlockProfileRate(0)
	}()
	mu0, bl0 := snapshot(t, "mutex"), snapshot(t, "block")
	start := time.Now()
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() { work(w) })
	}
	wg.Wait()
	elapsed := time.Since(start)
	return delta(t, snapshot(t, "mutex"), mu0, elapsed), delta(t, snapshot(t, "block"), bl0, elapsed)
}

func snapshot(t *testing.T, name string) *profile.Profile {
	t.Helper()
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

func delta(t *testing.T, after, before *profile.Profile, d time.Duration) *profile.Profile {
	t.Helper()
	before.Scale(-1)
	p, err := profile.Merge([]*profile.Profile{after, before})
	if err != nil {
		t.Fatal(err)
	}
	p.DurationNanos = int64(d)
	return p
}

func evidenceOf(profiles map[evidence.Kind]*profile.Profile, gomaxprocs int) *evidence.Evidence {
	ev := testprof.Evidence(profiles)
	ev.Manifest = &bundle.Manifest{Runtime: bundle.RuntimeInfo{GOMAXPROCS: gomaxprocs, Source: "test"}}
	return ev
}

// criticalSection is the work done under the lock: a little hashing.
func criticalSection(buf *[256]byte) {
	sum := sha256.Sum256(buf[:])
	buf[0] = sum[0]
}

type paddedMutex struct {
	sync.Mutex
	buf [256]byte
	_   [64]byte
}

var (
	shared  paddedMutex
	sharded [16]paddedMutex
)

// contended holds one lock across a short sleep as well as the hashing, so
// the other workers wait for it even when a loaded machine runs them one at
// a time (pure CPU work under the lock would then never contend).
func contended(int) {
	for range 100 {
		shared.Lock()
		criticalSection(&shared.buf)
		time.Sleep(20 * time.Microsecond)
		shared.Unlock()
	}
}

func perWorker(w int) {
	m := &sharded[w%len(sharded)]
	for range 3000 {
		m.Lock()
		criticalSection(&m.buf)
		m.Unlock()
	}
}

func TestFiresOnContendedLock(t *testing.T) {
	mu, bl := lockProfiles(t, 8, contended)
	res := rules.Run(facts.New(evidenceOf(map[evidence.Kind]*profile.Profile{evidence.Mutex: mu, evidence.Block: bl}, runtime.GOMAXPROCS(0))), []*rules.Rule{Rule})
	if len(res.Findings) != 1 {
		t.Fatalf("want one lock-contention finding, got %d (not checked %v)", len(res.Findings), res.NotChecked)
	}
	f := res.Findings[0]
	if f.Class != "lock-contention" || f.Resource != "latency" { // severity thresholds are tested on synthetic profiles: load on the machine moves real ones
		t.Errorf("finding %s severity %s resource %s", f.Class, f.Severity, f.Resource)
	}
	if len(f.Locations) == 0 || !strings.HasSuffix(f.Locations[0].Function, "lock001.contended") || f.Locations[0].Line == 0 {
		t.Fatalf("locations %+v, want the holder lock001.contended first", f.Locations)
	}
	waiter := false
	for _, l := range f.Locations {
		waiter = waiter || strings.Contains(l.Role, "waiting") && strings.HasSuffix(l.Function, "lock001.contended")
	}
	if !waiter {
		t.Errorf("the block profile's waiting site is not named: %+v", f.Locations)
	}
	if !strings.Contains(f.Summary, "lock001.contended (lockcontention_test.go:") || !strings.Contains(f.Fix, "Shard") {
		t.Errorf("summary %q / fix %q", f.Summary, f.Fix)
	}
}

func TestSilentOnShardedLocks(t *testing.T) {
	mu, bl := lockProfiles(t, 8, perWorker)
	res := rules.Run(facts.New(evidenceOf(map[evidence.Kind]*profile.Profile{evidence.Mutex: mu, evidence.Block: bl}, runtime.GOMAXPROCS(0))), []*rules.Rule{Rule})
	if len(res.Findings) != 0 {
		t.Fatalf("sharded locks got %+v", res.Findings[0])
	}
}

// mutexProfile builds a mutex (or block) profile lasting 10 s.
func mutexProfile(duration time.Duration, stacks ...testprof.Stack) *profile.Profile {
	p := &profile.Profile{
		SampleType:    []*profile.ValueType{{Type: "contentions", Unit: "count"}, {Type: "delay", Unit: "nanoseconds"}},
		PeriodType:    &profile.ValueType{Type: "contentions", Unit: "count"},
		Period:        1,
		DurationNanos: int64(duration),
	}
	funcs := map[string]*profile.Location{}
	for _, s := range stacks {
		var locs []*profile.Location
		for _, name := range s.Funcs {
			loc := funcs[name]
			if loc == nil {
				fn := &profile.Function{ID: uint64(len(funcs) + 1), Name: name, Filename: "cache.go"}
				loc = &profile.Location{ID: uint64(len(funcs) + 1), Line: []profile.Line{{Function: fn, Line: int64(40 + len(funcs))}}}
				funcs[name] = loc
				p.Function = append(p.Function, fn)
				p.Location = append(p.Location, loc)
			}
			locs = append(locs, loc)
		}
		p.Sample = append(p.Sample, &profile.Sample{Location: locs, Value: []int64{s.Value / int64(time.Millisecond), s.Value}})
	}
	return p
}

func TestSeverityThresholds(t *testing.T) {
	const procs = 4
	window := 10 * time.Second
	for _, tc := range []struct {
		share float64
		fires bool
		want  rules.Severity
	}{
		{0.04, false, 0},
		{0.06, true, rules.Low},
		{0.20, true, rules.Medium},
		{0.50, true, rules.High},
	} {
		delay := int64(tc.share * float64(window) * procs)
		mu := mutexProfile(window,
			testprof.Stack{Value: delay, Funcs: []string{"sync.(*Mutex).Unlock", "main.(*Cache).Get", "main.handler"}},
			testprof.Stack{Value: int64(window), Funcs: []string{"runtime._LostContendedRuntimeLock"}},
		)
		res := rules.Run(facts.New(evidenceOf(map[evidence.Kind]*profile.Profile{evidence.Mutex: mu}, procs)), []*rules.Rule{Rule})
		if got := len(res.Findings) == 1; got != tc.fires {
			t.Fatalf("share %.2f: fired=%v, want %v", tc.share, got, tc.fires)
		}
		if !tc.fires {
			continue
		}
		f := res.Findings[0]
		if f.Severity != tc.want {
			t.Errorf("share %.2f: severity %s, want %s", tc.share, f.Severity, tc.want)
		}
		if f.Evidence[0].Num < tc.share*0.99 || f.Evidence[0].Num > tc.share*1.01 {
			t.Errorf("share %.2f: measured %v (runtime-internal waits must not count)", tc.share, f.Evidence[0].Num)
		}
		if !strings.Contains(f.Summary, "main.(*Cache).Get (cache.go:") {
			t.Errorf("summary %q does not name the site", f.Summary)
		}
	}
}

func TestReadersQueuedBehindWritersGetCopyOnWrite(t *testing.T) {
	mu := mutexProfile(10*time.Second,
		testprof.Stack{Value: int64(8 * time.Second), Funcs: []string{"sync.(*RWMutex).RUnlock", "main.(*Config).Get", "main.handler"}},
		testprof.Stack{Value: int64(time.Second), Funcs: []string{"sync.(*RWMutex).Unlock", "main.(*Config).Reload"}},
	)
	res := rules.Run(facts.New(evidenceOf(map[evidence.Kind]*profile.Profile{evidence.Mutex: mu}, 2)), []*rules.Rule{Rule})
	if len(res.Findings) != 1 || !strings.Contains(res.Findings[0].Fix, "atomic.Pointer") {
		t.Fatalf("findings %+v", res.Findings)
	}
}

func TestCumulativeProfileUsesUptime(t *testing.T) {
	mu := mutexProfile(0, testprof.Stack{Value: int64(100 * time.Second), Funcs: []string{"sync.(*Mutex).Unlock", "main.(*Cache).Get"}})
	end := time.Unix(2_000_000, 0)
	mu.TimeNanos = end.UnixNano()

	ev := evidenceOf(map[evidence.Kind]*profile.Profile{evidence.Mutex: mu}, 2)
	res := rules.Run(facts.New(ev), []*rules.Rule{Rule})
	if len(res.Findings) != 0 || len(res.NotChecked) != 1 || !strings.Contains(res.NotChecked[0].Reason, "cumulative") {
		t.Fatalf("without a start time: findings %v, not checked %v", res.Findings, res.NotChecked)
	}

	// Up 1000 s with 100 s of waiting on 2 Ps: 5% wait share.
	ev = evidenceOf(map[evidence.Kind]*profile.Profile{evidence.Mutex: mu}, 2)
	ev.SystemEnd = &bundle.SystemSnapshot{Time: end, Process: &bundle.ProcessInfo{StartTime: float64(end.Unix() - 1000)}}
	res = rules.Run(facts.New(ev), []*rules.Rule{Rule})
	if len(res.Findings) != 1 {
		t.Fatalf("with uptime: no finding (not checked %v)", res.NotChecked)
	}
	if got := res.Findings[0].Evidence[0].Num; got < 0.049 || got > 0.051 {
		t.Errorf("share over uptime = %v, want 0.05", got)
	}
}

func TestBlockProfileAloneNamesTheWaiters(t *testing.T) {
	mu := mutexProfile(10 * time.Second)
	bl := mutexProfile(10*time.Second,
		testprof.Stack{Value: int64(5 * time.Second), Funcs: []string{"sync.(*Mutex).Lock", "main.(*Pool).Get", "main.handler"}},
		testprof.Stack{Value: int64(50 * time.Second), Funcs: []string{"runtime.chanrecv1", "main.worker"}},
		testprof.Stack{Value: int64(50 * time.Second), Funcs: []string{"sync.(*WaitGroup).Wait", "main.main"}},
	)
	res := rules.Run(facts.New(evidenceOf(map[evidence.Kind]*profile.Profile{evidence.Mutex: mu, evidence.Block: bl}, 2)), []*rules.Rule{Rule})
	if len(res.Findings) != 1 {
		t.Fatalf("no finding; not checked %v", res.NotChecked)
	}
	f := res.Findings[0]
	// 5 s of lock waits over 10 s × 2 Ps; channel and WaitGroup waits are idle waits, not contention.
	if f.Evidence[0].Num != 0.25 || !strings.Contains(f.Summary, "taken in main.(*Pool).Get") {
		t.Errorf("share %v, summary %q", f.Evidence[0].Num, f.Summary)
	}
}

func TestEmptyProfilesAreNotChecked(t *testing.T) {
	res := rules.Run(facts.New(evidenceOf(map[evidence.Kind]*profile.Profile{evidence.Mutex: mutexProfile(time.Second)}, 2)), []*rules.Rule{Rule})
	if len(res.Findings) != 0 || len(res.NotChecked) != 1 || !strings.Contains(res.NotChecked[0].Reason, "SetMutexProfileFraction") {
		t.Fatalf("findings %v, not checked %v", res.Findings, res.NotChecked)
	}
	res = rules.Run(facts.New(testprof.Evidence(map[evidence.Kind]*profile.Profile{})), []*rules.Rule{Rule})
	if len(res.NotChecked) != 1 || res.NotChecked[0].Missing[0] != rules.Mutex {
		t.Fatalf("without a mutex profile: %+v", res.NotChecked)
	}
}

// curlFolder runs work on `workers` goroutines in a loop and saves, as curl
// would from /debug/pprof into a plain folder, a cumulative mutex profile
// (no window, no process start time), a goroutine profile taken under the
// load and a 300 ms execution trace, and loads the folder.
func curlFolder(t *testing.T, workers int, work func(worker int)) *evidence.Evidence {
	t.Helper()
	oldFrac := runtime.SetMutexProfileFraction(1)
	defer runtime.SetMutexProfileFraction(oldFrac)
	dir := t.TempDir()
	save := func(name string, write func(*os.File) error) {
		f, err := os.Create(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := write(f); err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	var stop atomic.Bool
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for !stop.Load() {
				work(w)
			}
		})
	}
	time.Sleep(100 * time.Millisecond)
	save("trace", func(f *os.File) error {
		if err := rtrace.Start(f); err != nil {
			return err
		}
		time.Sleep(150 * time.Millisecond)
		save("goroutine", func(f *os.File) error { return pprof.Lookup("goroutine").WriteTo(f, 0) })
		time.Sleep(150 * time.Millisecond)
		rtrace.Stop()
		return nil
	})
	stop.Store(true)
	wg.Wait()
	save("mutex", func(f *os.File) error { return pprof.Lookup("mutex").WriteTo(f, 0) })
	ev, err := evidence.Load(t.Context(), evidence.LoadOptions{}, dir)
	if err != nil {
		t.Fatal(err)
	}
	if p := ev.Profile(evidence.Mutex); p == nil || p.DurationNanos != 0 || ev.TracePath == "" || ev.Profile(evidence.Goroutine) == nil {
		t.Fatalf("the folder did not load as a cumulative mutex profile, a trace and a goroutine profile: %+v", ev.Sources)
	}
	return ev
}

func TestCurlFolderWithoutWindowUsesTraceAndGoroutines(t *testing.T) {
	res := rules.Run(facts.New(curlFolder(t, 8, contended)), []*rules.Rule{Rule})
	if len(res.Findings) != 1 {
		t.Fatalf("a global lock under load, saved with curl: no finding (not checked %v)", res.NotChecked)
	}
	f := res.Findings[0]
	used := ""
	for _, e := range f.Evidence {
		if e.Name == "evidence used" {
			used = e.Value
		}
	}
	for _, want := range []string{"execution trace", "goroutine profile", "mutex profile: cumulative"} {
		if !strings.Contains(used, want) {
			t.Errorf("evidence used %q does not name the %s", used, want)
		}
	}
	if !strings.Contains(f.Summary, "lock001.contended") || !strings.Contains(f.Summary, "execution trace") {
		t.Errorf("summary %q", f.Summary)
	}
	roles := map[string]bool{}
	for _, l := range f.Locations {
		if strings.HasSuffix(l.Function, "lock001.contended") {
			roles[l.Role] = true
		}
	}
	if !roles["waiting for the lock here (execution trace)"] || !roles["lock holder (cumulative mutex profile)"] {
		t.Errorf("locations %+v", f.Locations)
	}
}

func TestCurlFolderWithShardedLocksIsSilent(t *testing.T) {
	res := rules.Run(facts.New(curlFolder(t, 2, perWorker)), []*rules.Rule{Rule})
	if len(res.Findings) != 0 {
		t.Fatalf("per-worker locks reported: %+v", res.Findings[0])
	}
}

func TestGoroutineProfileAloneIsOneInstant(t *testing.T) {
	parked := []string{"runtime.gopark", "runtime.semacquire1", "sync.runtime_SemacquireMutex", "internal/sync.(*Mutex).lockSlow", "internal/sync.(*Mutex).Lock", "sync.(*Mutex).Lock", "main.(*Cache).Get", "main.handler"}
	gp := func(waiting int64) *profile.Profile {
		p := testprof.Build(testprof.Stack{Value: waiting, Funcs: parked}, testprof.Stack{Value: 40, Funcs: []string{"runtime.gopark", "runtime.netpollblock", "net.(*conn).Read", "main.serve"}})
		p.SampleType = []*profile.ValueType{{Type: "goroutine", Unit: "count"}}
		for _, s := range p.Sample {
			s.Value = s.Value[:1]
		}
		return p
	}
	// The target never enabled the mutex profile: it is there but empty.
	res := rules.Run(facts.New(evidenceOf(map[evidence.Kind]*profile.Profile{evidence.Mutex: mutexProfile(0), evidence.Goroutine: gp(6)}, 2)), []*rules.Rule{Rule})
	if len(res.Findings) != 1 {
		t.Fatalf("6 goroutines parked on one lock with 2 Ps: no finding (not checked %v)", res.NotChecked)
	}
	if f := res.Findings[0]; f.Severity != rules.Medium || !strings.Contains(f.Summary, "main.(*Cache).Get") || !strings.Contains(strings.Join(f.Caveats, " "), "one instant") {
		t.Errorf("severity %s summary %q caveats %q", f.Severity, f.Summary, f.Caveats)
	}
	if res := rules.Run(facts.New(evidenceOf(map[evidence.Kind]*profile.Profile{evidence.Mutex: mutexProfile(0), evidence.Goroutine: gp(0)}, 2)), []*rules.Rule{Rule}); len(res.Findings) != 0 {
		t.Errorf("no waiters reported: %+v", res.Findings[0])
	}
}
