// Package lock001 detects goroutines queueing on shared locks
// (finding class lock-contention).
package lock001

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/perfdoctor/perfdoctor/facts"

	"github.com/perfdoctor/perfdoctor/internal/human"

	"github.com/google/pprof/profile"

	"github.com/perfdoctor/perfdoctor/bundle"
	"github.com/perfdoctor/perfdoctor/evidence"
	"github.com/perfdoctor/perfdoctor/rules"
)

// Rule is LOCK001.
var Rule = &rules.Rule{
	ID:    "LOCK001",
	Class: "lock-contention",
	Doc: rules.Doc{
		Title: "Goroutines queue on a shared lock",
		Text: `A sync.Mutex or RWMutex that many goroutines take on every request
serialises them: while one holds it the others park, and the service cannot use
more CPUs however many it has. The wait adds straight to request latency and
caps throughput; it does not show as CPU, so a CPU profile alone misses it.`,
		Evidence: `The mutex profile's delay (goroutine time spent waiting for a sync.Mutex or
RWMutex, attributed to the code that held it, at the Unlock), else the block
profile's waits in Lock/RLock (attributed to the waiting call site); both
per call site. The delay is normalised to a wait share: delay / (span ×
GOMAXPROCS), the average number of goroutines queued on locks per P. The span
is the profile's own duration for a delta profile (?seconds=N), else the
process's uptime (the profiles are cumulative since the process started).
GOMAXPROCS comes from the target's settings, else the cores the CPU profile
shows busy. Reports from a wait share of 0.05 waiting goroutines per P (low),
0.15 (medium), 0.40 (high). CPU spent in lock slow paths (spinning, futex,
runtime.lock2) is shown alongside. Without a lock profile that has a window
(a cumulative profile saved with curl and no process start time, or none at
all) the same wait share comes from the execution trace: goroutine time
blocked acquiring a sync.Mutex or RWMutex (the blocking stack holds Lock or
RLock; WaitGroup and Cond waits are not counted) over the trace's window ×
GOMAXPROCS; without a trace, from the goroutine profile: goroutines parked in
sync's semacquire per P at that one instant (at most medium). A cumulative
mutex profile then still names the holders. The finding says which evidence
it used.`,
		Fix: `Take the lock less, for less time: shard it (N mutex+map pairs chosen by a
hash of the key), move work out of the critical section (I/O, allocation,
formatting, logging), make read-mostly data copy-on-write behind an
atomic.Pointer so readers take no lock at all, or keep per-goroutine / per-P
state (sharded counters, a per-worker buffer merged later).`,
		Before: `mu.Lock(); defer mu.Unlock(); v := cache[k]   // every request, one lock`,
		After: `shard := &shards[hash(k)%len(shards)]; shard.mu.Lock(); v := shard.m[k]; shard.mu.Unlock()
// or, read-mostly: snap := cache.Load(); v := (*snap)[k]   // atomic.Pointer[map[K]V], copy on write`,
		Caveats: `The mutex and block profiles are off by default: the target must call
runtime.SetMutexProfileFraction (and SetBlockProfileRate). A cumulative profile
spreads contention over the whole uptime, so contention that only appears under
load is understated; collect a delta (?seconds=N) under load. Runtime-internal
lock contention (runtime.unlock) is reported separately and is not the
service's own lock. Channel waits in the block profile are not judged here:
they are mostly idle goroutines waiting for work.`,
		Since: "0.1",
		Refs: []string{
			"https://pkg.go.dev/runtime#SetMutexProfileFraction",
			"https://go.dev/doc/diagnostics#profiling",
		},
	},
	Needs: []rules.Input{rules.Mutex},
	// Without a window for the mutex profile, the trace and the goroutine
	// profile measure the waits.
	Uses:  []rules.Input{rules.Block, rules.Trace, rules.Goroutine, rules.CPU, rules.System},
	Facts: []facts.Key{facts.CPUStacks, facts.CoresUsed},
	Check: check,
}

// HolderFrames end a mutex-profile stack: the Unlock that released a lock
// others were waiting for.
var HolderFrames = evidence.FuncPrefix(
	"sync.(*Mutex).Unlock", "sync.(*RWMutex).Unlock", "sync.(*RWMutex).RUnlock",
	"internal/sync.(*Mutex).Unlock",
)

// RuntimeLockFrames are the runtime's own locks in the mutex profile.
var RuntimeLockFrames = evidence.FuncPrefix("runtime.unlock", "runtime._LostContendedRuntimeLock")

// WaiterFrames are lock acquisitions in the block profile.
var WaiterFrames = evidence.FuncPrefix(
	"sync.(*Mutex).Lock", "sync.(*RWMutex).Lock", "sync.(*RWMutex).RLock",
	"internal/sync.(*Mutex).Lock",
)

// readLock marks waits for a read lock (readers queued behind writers).
var readLock = evidence.FuncPrefix("sync.(*RWMutex).RLock", "sync.(*RWMutex).RUnlock")

// LockCPUFrames is CPU spent in lock slow paths: spinning, futex sleeps
// and wakes for contended locks.
var LockCPUFrames = evidence.FuncPrefix(
	"sync.(*Mutex).lockSlow", "sync.(*Mutex).unlockSlow", "internal/sync.(*Mutex).lockSlow",
	"internal/sync.(*Mutex).unlockSlow", "sync.(*RWMutex).rUnlockSlow",
	"sync.runtime_SemacquireMutex", "sync.runtime_SemacquireRWMutex", "sync.runtime_Semrelease",
	"internal/sync.runtime_SemacquireMutex", "internal/sync.runtime_Semrelease",
	"runtime.lock2", "runtime.unlock2", "runtime.lockWithRank",
)

// isSyncOrRuntime skips frames of the lock implementation when naming the
// code that took the lock.
func isSyncOrRuntime(fn string) bool {
	return evidence.IsRuntime(fn) || strings.HasPrefix(fn, "sync.") || strings.HasPrefix(fn, "internal/sync.")
}

const (
	lowShare    = 0.05
	mediumShare = 0.15
	highShare   = 0.40
)

// contention is one profile's lock waits.
type contention struct {
	source  string // "mutex" or "block"
	delay   time.Duration
	count   int64
	sites   []evidence.Site
	read    float64 // share of the delay on read locks
	runtime time.Duration
	span    time.Duration
	spanSrc string
}

func check(pass *rules.Pass) error {
	ev := pass.Evidence
	mu := measure(ev, evidence.Mutex, "mutex", HolderFrames)
	bl := measure(ev, evidence.Block, "block", WaiterFrames)
	c := mu
	if c == nil || c.delay == 0 {
		if bl != nil && bl.delay > 0 {
			c = bl
		}
	}
	if c == nil || (c.delay == 0 && c.runtime == 0) || c.span <= 0 {
		// No lock profile with a window: the trace and the goroutine
		// profile still show goroutines waiting for locks.
		if fused(pass, c) {
			return nil
		}
		switch {
		case c != nil && c.delay > 0:
			pass.Skip("the lock profiles are cumulative and the process start time is unknown, so contention cannot be turned into a rate, and there is no execution trace or goroutine profile to measure it instead: collect /debug/pprof/mutex?seconds=N, or run perfdoctor collect on the target's host")
		case empty(ev.Profile(evidence.Mutex)) && empty(ev.Profile(evidence.Block)):
			pass.Skip("the mutex profile is empty: there was no contention, or the target never enabled it (runtime.SetMutexProfileFraction)")
		}
		return nil
	}
	procs, procsSrc := parallelism(ev, facts.Get(pass.Facts, facts.CoresUsed))
	capacity := c.span.Seconds() * procs
	share := c.delay.Seconds() / capacity
	if share < lowShare {
		return nil
	}

	f := rules.Finding{
		Severity: rules.Grade(share, mediumShare, highShare),
		Impact:   min(share, 1) / 2,
		Resource: "latency",
		ImpactBasis: "half the lock wait share (goroutine time waiting for locks over span × GOMAXPROCS): " +
			"sharding or shrinking the critical section removes most of the queueing, not the serialised work itself",
		Evidence: []rules.Fact{
			rules.Count("goroutines waiting for locks per P (wait share)", round(share, 3), ""),
			rules.Count("lock wait", round(c.delay.Seconds(), 3), "s"),
			rules.Count("contended acquisitions", float64(c.count), ""),
			rules.Text("span of the "+c.source+" profile", fmt.Sprintf("%s (%s)", c.span.Round(time.Millisecond), c.spanSrc)),
			rules.Count("GOMAXPROCS used to normalise", procs, ""),
			rules.Text("GOMAXPROCS source", procsSrc),
		},
	}
	if c.count > 0 {
		f.Evidence = append(f.Evidence, rules.Count("mean wait per contended acquisition", round(float64(c.delay.Microseconds())/float64(c.count), 1), "µs"))
	}
	role := "lock holder (critical section ends here)"
	if c.source == "block" {
		role = "waiting for the lock here"
	}
	for _, s := range c.sites {
		f.Locations = append(f.Locations, rules.Location{Function: s.Func, File: s.File, Line: s.Line, Share: s.Flat, Role: role})
	}
	// The other profile names the other side of the same locks.
	if other := bl; c == mu && other != nil && other.delay > 0 {
		for _, s := range other.sites[:min(3, len(other.sites))] {
			f.Locations = append(f.Locations, rules.Location{Function: s.Func, File: s.File, Line: s.Line, Share: s.Flat, Role: "waiting for the lock here (block profile)"})
		}
	}
	if c.runtime >= time.Millisecond {
		f.Evidence = append(f.Evidence, rules.Count("runtime-internal lock wait (not the service's locks)", round(c.runtime.Seconds(), 3), "s"))
	}
	if c.read > 0 {
		f.Evidence = append(f.Evidence, rules.Share("of the wait on RWMutex read locks", c.read))
	}
	if pass.Has(rules.CPU) {
		cpu := facts.Get(pass.Facts, facts.CPUStacks)
		if s := cpu.Share(LockCPUFrames); s > 0 {
			f.Evidence = append(f.Evidence, rules.Share("CPU in lock slow paths (spinning, futex)", s))
			f.Frames = cpu.Matched(LockCPUFrames, 8)
		}
	}

	where := "a shared lock"
	if len(c.sites) > 0 {
		where = rules.SiteName(c.sites[0].Frame)
	}
	verb := "released"
	if c.source == "block" {
		verb = "taken"
	}
	f.Summary = fmt.Sprintf("Goroutines queue on a lock %s in %s: on average %.2g goroutines per P were waiting for it over %s",
		verb, where, share, c.span.Round(time.Millisecond))

	var holders string
	if len(c.sites) > 0 {
		holders = fmt.Sprintf("The contended lock is %s at %s. ", map[string]string{"mutex": "held (released)", "block": "taken"}[c.source], rules.SiteList(c.sites, 3))
	}
	f.Fix, f.Example = prescribe(holders, c.read)
	if c.spanSrc == spanUptime {
		f.Caveats = append(f.Caveats, "Cumulative profile: contention is averaged over the process's uptime; a delta profile under load (?seconds=N) is sharper.")
	}
	if c.source == "block" {
		f.Caveats = append(f.Caveats, "The mutex profile shows no sync lock waits; the block profile's waiting sites are used instead.")
	}
	if strings.HasPrefix(procsSrc, "assumed") {
		f.Caveats = append(f.Caveats, "GOMAXPROCS unknown: the wait share is per busy core and may be overstated on a machine with more cores.")
	}
	f.Claim = &rules.Claim{Level: rules.LevelCode, HeldIn: lockFunctions(f.Locations)}
	pass.Report(f)
	return nil
}

// prescribe is the fix for contention on the named sites, and its example;
// read is the share of the wait on read locks.
func prescribe(sites string, read float64) (fix, example string) {
	if read >= 0.5 {
		fix = "Most of the wait is readers queued behind writers on an RWMutex: make the data copy-on-write behind an atomic.Pointer (readers load a snapshot without locking, writers copy, modify and swap), or shard it. "
		example = "var cfg atomic.Pointer[Config]   // readers: c := cfg.Load(); writers: n := *cfg.Load(); n.X = v; cfg.Store(&n)"
	} else {
		fix = "Shard the lock (N mutex+map pairs chosen by a hash of the key), shrink the critical section (no I/O, allocation, formatting or logging while holding it), use copy-on-write (atomic.Pointer) for read-mostly data, or keep per-goroutine/per-P state merged later. "
		example = "type shard struct { mu sync.Mutex; m map[string]V }\nvar shards [64]shard   // shards[fnv32(k)%64]: lock only the key's shard"
	}
	return sites + fix + "Then check the wait share falls in a new profile under the same load.", example
}

const spanUptime = "process uptime; the profile is cumulative"

// measure reads the lock waits of one profile: sync lock samples whose
// stack holds a frame matching lockFrames, attributed to the first frame
// above the lock implementation.
func measure(ev *evidence.Evidence, k evidence.Kind, name string, lockFrames evidence.Matcher) *contention {
	p := ev.Profile(k)
	st := evidence.NewStacks(p, "delay")
	if st == nil {
		return nil
	}
	c := &contention{source: name}
	c.span, c.spanSrc = span(ev, p)
	isLock, isRuntime, isRead := st.Has(lockFrames), st.Has(RuntimeLockFrames), st.Has(readLock)
	counts := evidence.NewStacks(p, "contentions")
	var read int64
	for _, s := range st.Samples {
		switch {
		case isLock(s):
			c.delay += time.Duration(s.Value)
			if isRead(s) {
				read += s.Value
			}
		case isRuntime(s):
			c.runtime += time.Duration(s.Value)
		}
	}
	if counts != nil {
		has := counts.Has(lockFrames)
		for _, s := range counts.Samples {
			if has(s) {
				c.count += s.Value
			}
		}
	}
	if c.delay > 0 {
		c.read = float64(read) / float64(c.delay)
		pick := st.First(func(fn string) bool { return !isSyncOrRuntime(fn) })
		sites := st.TopSites(5, func(s evidence.Sample) *evidence.Frame {
			if !isLock(s) {
				return nil
			}
			return pick(s)
		})
		// Shares of the lock waits, not of everything the profile holds.
		for i := range sites {
			sites[i].Flat = float64(sites[i].Value) / float64(c.delay)
		}
		c.sites = sites
	}
	return c
}

// span is the time the profile's delays accumulated over.
func span(ev *evidence.Evidence, p *profile.Profile) (time.Duration, string) {
	if p.DurationNanos > 0 {
		return time.Duration(p.DurationNanos), "delta profile"
	}
	for _, snap := range []*bundle.SystemSnapshot{ev.SystemEnd, ev.SystemStart} {
		if snap == nil || snap.Process == nil || snap.Process.StartTime <= 0 {
			continue
		}
		end := snap.Time
		if p.TimeNanos > 0 {
			end = time.Unix(0, p.TimeNanos)
		}
		start := time.Unix(0, int64(snap.Process.StartTime*1e9))
		if d := end.Sub(start); d > 0 {
			return d, spanUptime
		}
	}
	return 0, ""
}

// parallelism is the number of Ps the waits are normalised by.
func parallelism(ev *evidence.Evidence, busy float64) (float64, string) {
	if s := ev.Settings(); s.GOMAXPROCS > 0 {
		return float64(s.GOMAXPROCS), s.GOMAXPROCSSrc
	}
	if ts := ev.TraceSummary; ts != nil && ts.GOMAXPROCS > 0 {
		return float64(ts.GOMAXPROCS), "execution trace"
	}
	if busy >= 1 {
		return busy, fmt.Sprintf("assumed: %.1f cores busy in the CPU profile", busy)
	}
	return 1, "assumed: 1 (unknown)"
}

// SemacquireFrames are a goroutine parked waiting for a sync lock, as the
// goroutine profile shows it.
var SemacquireFrames = evidence.FuncPrefix(
	"sync.runtime_SemacquireMutex", "sync.runtime_SemacquireRWMutex", "internal/sync.runtime_SemacquireMutex",
)

// fused reports lock contention from the execution trace (goroutines
// blocked acquiring a sync.Mutex or RWMutex over the trace's window) or,
// without one, the goroutine profile (goroutines parked in Lock at one
// instant), naming the holders from a mutex profile that has no window. It
// returns false when neither is in the evidence.
func fused(pass *rules.Pass, holders *contention) bool {
	ev := pass.Evidence
	procs, procsSrc := parallelism(ev, facts.Get(pass.Facts, facts.CoresUsed))
	var (
		share     float64
		window    string
		shown     []rules.Fact
		locations []rules.Location
		used      []string
		instant   bool
		top       string
	)
	tr, err := ev.Trace()
	if err == nil && tr != nil && tr.Window > 0 {
		if tr.GOMAXPROCS > 0 {
			procs, procsSrc = float64(tr.GOMAXPROCS), "execution trace"
		}
		share = tr.LockWait.Seconds() / (tr.Window.Seconds() * procs)
		window = "over the " + human.RoundDuration(tr.Window).String() + " execution trace"
		used = append(used, "execution trace: goroutines blocked acquiring a sync.Mutex or RWMutex over its "+human.RoundDuration(tr.Window).String())
		shown = append(shown,
			rules.Count("goroutines waiting for locks per P (wait share)", round(share, 3), ""),
			rules.Count("lock wait in the trace", round(tr.LockWait.Seconds(), 3), "s"),
			rules.Duration("trace window", tr.Window))
		var total int
		for _, l := range tr.LockSites {
			total += l.Blocks
		}
		shown = append(shown, rules.Count("blocking lock acquisitions in the trace", float64(total), ""))
		for _, l := range tr.LockSites[:min(5, len(tr.LockSites))] {
			locations = append(locations, rules.Location{Function: l.Func, File: l.File, Line: l.Line,
				Share: l.Wait.Seconds() / max(tr.LockWait.Seconds(), 1e-9), Role: "waiting for the lock here (execution trace)"})
		}
		if len(tr.LockSites) > 0 {
			top = rules.SiteName(evidence.Frame{Func: tr.LockSites[0].Func, File: tr.LockSites[0].File, Line: tr.LockSites[0].Line})
		}
	}
	if st := evidence.NewStacks(ev.Profile(evidence.Goroutine), ""); st != nil {
		waiting := st.Has(SemacquireFrames)
		var n int64
		for _, s := range st.Samples {
			if waiting(s) {
				n += s.Value
			}
		}
		pick := st.First(func(fn string) bool { return !isSyncOrRuntime(fn) })
		sites := st.TopSites(5, func(s evidence.Sample) *evidence.Frame {
			if !waiting(s) {
				return nil
			}
			return pick(s)
		})
		used = append(used, fmt.Sprintf("goroutine profile: %d goroutines parked in sync lock acquisition at the snapshot", n))
		shown = append(shown, rules.Count("goroutines waiting for a lock in the goroutine profile", float64(n), ""))
		if window == "" {
			instant = true
			share = float64(n) / procs
			window = "in the goroutine profile's snapshot"
			shown = append([]rules.Fact{rules.Count("goroutines waiting for locks per P (one instant)", round(share, 3), "")}, shown...)
		}
		for _, s := range sites {
			locations = append(locations, rules.Location{Function: s.Func, File: s.File, Line: s.Line,
				Share: float64(s.Value) / float64(max(n, 1)), Role: "waiting for the lock here (goroutine profile)"})
		}
		if top == "" && len(sites) > 0 {
			top = rules.SiteName(sites[0].Frame)
		}
	}
	if len(used) == 0 {
		return false
	}
	if share < lowShare {
		return true
	}
	var holderText string
	if holders != nil && len(holders.sites) > 0 {
		used = append(used, holders.source+" profile: cumulative since an unknown start, so it names the holders but gives no rate")
		for _, s := range holders.sites[:min(3, len(holders.sites))] {
			locations = append(locations, rules.Location{Function: s.Func, File: s.File, Line: s.Line, Share: s.Flat, Role: "lock holder (cumulative " + holders.source + " profile)"})
		}
		holderText = "The cumulative " + holders.source + " profile names the holders: " + rules.SiteList(holders.sites, 3) + ". "
	}
	shown = append(shown,
		rules.Count("GOMAXPROCS used to normalise", procs, ""),
		rules.Text("GOMAXPROCS source", procsSrc),
		rules.Text("evidence used", strings.Join(used, "; ")))
	if top == "" {
		top = "a shared lock"
	}
	f := rules.Finding{
		Severity: rules.Grade(share, mediumShare, highShare),
		Impact:   min(share, 1) / 2,
		Resource: "latency",
		ImpactBasis: "half the lock wait share (goroutines waiting for locks per P): " +
			"sharding or shrinking the critical section removes most of the queueing, not the serialised work itself",
		Summary:   fmt.Sprintf("Goroutines queue on a lock taken in %s: %.2g goroutines per P were waiting for it %s", top, share, window),
		Evidence:  shown,
		Locations: locations,
	}
	f.Fix, f.Example = prescribe(holderText, 0)
	if instant {
		f.Severity = min(f.Severity, rules.Medium)
		f.Caveats = append(f.Caveats, "Measured at one instant (the goroutine profile): an execution trace or a delta mutex profile (?seconds=N) under load gives the wait over a window.")
	} else {
		f.Caveats = append(f.Caveats, "Measured over the execution trace's window only (the end of the collection).")
	}
	if pass.Has(rules.CPU) {
		cpu := facts.Get(pass.Facts, facts.CPUStacks)
		if s := cpu.Share(LockCPUFrames); s > 0 {
			f.Evidence = append(f.Evidence, rules.Share("CPU in lock slow paths (spinning, futex)", s))
			f.Frames = cpu.Matched(LockCPUFrames, 8)
		}
	}
	f.Claim = &rules.Claim{Level: rules.LevelCode, HeldIn: lockFunctions(f.Locations)}
	pass.Report(f)
	return true
}

func empty(p *profile.Profile) bool { return p == nil || len(p.Sample) == 0 }

func round(v float64, digits int) float64 {
	p := 1.0
	for range digits {
		p *= 10
	}
	return float64(int64(v*p+0.5)) / p
}

// lockFunctions are the functions that take or hold the contended lock:
// what they do while holding it is what the others wait for.
func lockFunctions(locs []rules.Location) []string {
	var out []string
	for _, l := range locs {
		if !slices.Contains(out, l.Function) {
			out = append(out, l.Function)
		}
	}
	return out
}
