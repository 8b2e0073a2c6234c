// Package trace summarises a Go execution trace (the format written by
// runtime/trace and /debug/pprof/trace since Go 1.22; older formats are
// converted by the reader) into the few numbers rules ask about: how long
// runnable goroutines wait for a CPU, how many goroutines are created and
// how long they live, what they block on, and what the collector did.
//
// It reads the trace as a stream of events with golang.org/x/exp/trace and
// keeps state only for live goroutines, fixed-size histograms and a bounded
// table of creation sites, so memory does not grow with the trace's length.
// It knows nothing of rules.
package trace

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	xtrace "golang.org/x/exp/trace"
)

// Summary is what an execution trace says about one window.
type Summary struct {
	GoVersion string        // from the trace header, e.g. "go1.26"
	Window    time.Duration // from the first event to the last
	Events    int           // events read
	// CPUSamples counts the CPU profile samples the trace carries (a CPU
	// profile was running while it was taken); 0 without one.
	CPUSamples int
	GOMAXPROCS int // the last value the trace reported; 0 if none

	// SchedLatency is the delay from runnable to running: every time a
	// goroutine was made ready (created, unblocked, preempted, back from a
	// syscall without its P) and then started running within the window.
	SchedLatency Dist
	// NetPollLatency is the part of SchedLatency where the goroutine had
	// been blocked on the network: the delay from the network poller making
	// it ready to it running.
	NetPollLatency Dist

	// Goroutine time summed over goroutines (goroutine-seconds): running,
	// waiting in a run queue, and blocked by reason (Blocked includes time
	// in system calls under ReasonSyscall). Time before the first and after
	// the last event is not seen.
	Running  time.Duration
	Runnable time.Duration
	Blocked  map[Reason]time.Duration
	// BlockedByReason is Blocked by the runtime's own reason strings
	// ("chan receive", "sync", "network", "syscall", ...).
	BlockedByReason map[string]time.Duration
	// LockWait is the part of the sync blocking spent acquiring a
	// sync.Mutex or RWMutex (the blocking stack holds its Lock or RLock),
	// not WaitGroup or Cond waits; LockSites are where, most wait first.
	LockWait  time.Duration
	LockSites []LockSite

	Goroutines Goroutines
	GC         GC

	// Partial says why the trace was read only in part (cut short after
	// some events, as when the program or the copy stopped early); the
	// summary covers the events before that point. Empty for a whole trace.
	Partial string `json:",omitempty"`
	// Waits are the times goroutines waited off the CPU (system calls
	// included) by reason and stack, most time first (waits.go);
	// WaitsDropped counts waits whose site did not fit the bounded table.
	Waits        []WaitSite
	WaitsDropped int64
	// Requests is the wall time of HTTP requests by handler and where it
	// went (requests.go), most requests first; net/http servers only.
	Requests []RequestPath
	// Parks are the places goroutines blocked at (the first frame outside
	// the runtime, sync and time), most blocked first: a queue that drains
	// wakes its waiters, a leak never does. At most MaxSites.
	Parks []ParkSite
}

// ParkSite is one place goroutines blocked at in the window.
type ParkSite struct {
	Frame  Frame
	Reason string // the runtime's block reason at the first block seen here
	// Blocked counts goroutines blocked here: those that blocked in the
	// window and those already blocked here when the trace began.
	Blocked int
	Woken   int // made runnable again within the window
	Still   int // still blocked here at the end of the window
}

// Goroutines is goroutine creation, lifetime and count over the window.
type Goroutines struct {
	AtStart int // already alive when the trace began
	AtEnd   int
	Max     int // the most alive at once

	Created       int     // created within the window
	CreatedPerSec float64 // Created over the window
	Ended         int     // created within the window and ended within it
	// Lifetime is from creation to exit, for goroutines created and ended
	// within the window (those still alive at the end are not included).
	Lifetime Dist
	// Sites are the creating sites, most goroutines created first; at most
	// MaxSites of them, merged by the creator's stack and the new
	// goroutines' entry function.
	Sites []Site
	// SitesDropped counts goroutines whose site was not kept because the
	// site table was full.
	SitesDropped int
}

// Site is where goroutines were created (a go statement) and what they did.
type Site struct {
	// Stack is the creating goroutine's stack at the go statement, leaf
	// (the go statement) first, at most siteFrames frames.
	Stack []Frame
	// Entry is the entry function of the goroutines created here.
	Entry   string
	Created int
	Ended   int           // of Created, those that ended within the window
	Life    time.Duration // total lifetime of the ended ones
	Running time.Duration // total time the goroutines created here ran
	Blocked time.Duration // total time they were blocked (runtime waits excluded)
}

// MeanLifetime is the average lifetime of the site's goroutines that ended.
func (s Site) MeanLifetime() time.Duration {
	if s.Ended == 0 {
		return 0
	}
	return s.Life / time.Duration(s.Ended)
}

// LockSite is where goroutines blocked acquiring a lock: the first frame
// outside sync and the runtime.
type LockSite struct {
	Frame
	Wait   time.Duration
	Blocks int // times a goroutine blocked here
}

// lockFrames are the acquisitions that block on a sync lock.
var lockFrames = []string{"sync.(*Mutex).Lock", "sync.(*RWMutex).Lock", "sync.(*RWMutex).RLock", "internal/sync.(*Mutex).Lock"}

// Frame is one function activation in a trace stack.
type Frame struct {
	Func string `json:"function"`
	File string `json:"file,omitempty"`
	Line int64  `json:"line,omitempty"`
}

// GC is the collector's activity in the window.
type GC struct {
	Cycles   int           // mark phases that began in the window
	Mark     Dist          // durations of mark phases begun and ended in the window
	MarkTime time.Duration // wall time with a mark phase active, partial ones included
	// STW is the stop-the-world pauses of the program, not those the tracer
	// itself caused when starting and stopping.
	STW         Dist
	STWByReason map[string]time.Duration
	// Holdouts is the code stop-the-world pauses of 2 ms or more waited
	// for, longest wait first.
	Holdouts []Holdout
	// LongRuns is the code goroutines ran 20 ms or more without yielding,
	// longest total first: what any stop-the-world begun during it waited
	// for, seen even when the trace caught no long pause.
	LongRuns    []LongRun
	Assist      time.Duration // goroutine time spent in mark assists
	HeapGoal    uint64        // bytes, the last value reported; 0 if none
	HeapObjects uint64        // bytes in heap objects, the last value reported
}

// Dist is a distribution of durations.
type Dist struct {
	Count                    int64
	Mean, P50, P90, P99, Max time.Duration
	Total                    time.Duration
}

// Reason is a family of reasons a goroutine blocks.
type Reason string

const (
	ReasonSync    Reason = "sync"    // sync.Mutex, RWMutex, WaitGroup, Cond
	ReasonChannel Reason = "channel" // channel send, receive, select
	ReasonNetwork Reason = "network" // the network poller
	ReasonSyscall Reason = "syscall" // in a system call
	ReasonSleep   Reason = "sleep"   // time.Sleep, timers
	ReasonGC      Reason = "gc"      // mark assist waits, waits for a GC cycle
	ReasonRuntime Reason = "runtime" // the runtime's own goroutines waiting for work
	ReasonOther   Reason = "other"
)

// Category maps a block reason of the trace to its family.
func Category(reason string) Reason {
	switch reason {
	case "sync", "sync.(*Cond).Wait":
		return ReasonSync
	case "chan send", "chan receive", "select":
		return ReasonChannel
	case "network":
		return ReasonNetwork
	case "syscall":
		return ReasonSyscall
	case "sleep":
		return ReasonSleep
	case "GC mark assist wait for work", "wait until GC ends", "GC weak to strong wait", "preempted":
		return ReasonGC
	case "system goroutine wait", "GC background sweeper wait":
		return ReasonRuntime
	}
	return ReasonOther
}

// MaxSites bounds the creation-site table.
const MaxSites = 1024

// siteFrames is how many frames of a creating stack are kept and compared.
const siteFrames = 8

var (
	// ErrNotTrace is returned for input that is not a Go execution trace.
	ErrNotTrace = errors.New("not a Go execution trace")
	// ErrCorrupt is returned for a trace that ends early or does not decode.
	ErrCorrupt = errors.New("execution trace truncated or corrupt")
)

// SummarizeFile summarises the trace in the named file, gzipped or not.
func SummarizeFile(path string) (*Summary, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	br := bufio.NewReader(f)
	var r io.Reader = br
	if head, _ := br.Peek(2); bytes.Equal(head, []byte{0x1f, 0x8b}) {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("%s: gzip: %w", path, err)
		}
		r = zr
	}
	s, err := Summarize(r)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return s, nil
}

var headerRE = regexp.MustCompile(`^go 1\.(\d+) trace\x00\x00\x00`)

// Summarize reads a whole trace and summarises it. It fails with
// ErrNotTrace for other content and ErrCorrupt for a trace that is cut
// short or does not decode.
func Summarize(r io.Reader) (sum *Summary, err error) {
	br := bufio.NewReaderSize(r, 64<<10)
	head, _ := br.Peek(16)
	m := headerRE.FindSubmatch(head)
	if m == nil {
		return nil, ErrNotTrace
	}
	minor, _ := strconv.Atoi(string(m[1]))
	a := newAnalyzer()
	a.sum.GoVersion = "go1." + strconv.Itoa(minor)
	defer func() {
		// The reader trusts table indexes in the data and panics on some
		// corruptions; a bad file must be an error, not a crash.
		if p := recover(); p != nil {
			sum, err = nil, fmt.Errorf("%w after %d events: %v", ErrCorrupt, a.sum.Events, p)
		}
	}()
	rd, err := xtrace.NewReader(br)
	if err != nil {
		if bytes.HasPrefix(head, []byte("go 1.")) && strings.Contains(err.Error(), "unsupported") {
			return nil, fmt.Errorf("%w: %v", ErrNotTrace, err)
		}
		return nil, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	for {
		ev, err := rd.ReadEvent()
		if err == io.EOF {
			break
		}
		if err != nil && a.transitions == 0 {
			return nil, fmt.Errorf("%w after %d events (%s into the trace): %v", ErrCorrupt, a.sum.Events, a.elapsed().Round(time.Microsecond), err)
		}
		if err != nil {
			// What was read before the cut is still the program's
			// behaviour: keep it, marked partial.
			s := a.finish()
			s.Partial = fmt.Sprintf("cut short or corrupt after %d events (%s into the trace): %v", a.sum.Events, a.elapsed().Round(time.Microsecond), err)
			return s, nil
		}
		a.event(ev)
	}
	if a.transitions == 0 {
		return nil, fmt.Errorf("%w: no goroutine events (empty, or cut after its header)", ErrCorrupt)
	}
	return a.finish(), nil
}

// goroutine is what is tracked per live goroutine.
type goroutine struct {
	state    xtrace.GoState
	since    xtrace.Time // when it entered state
	reason   string      // block reason while waiting
	netReady bool        // made runnable by the network poller
	censored bool        // since is the trace's start, not a real transition
	created  xtrace.Time // 0 if it existed before the trace
	site     int32       // index into analyzer.sites, or -1
	lock     int32       // while blocked on a lock: index into analyzer.locks + 1; else 0
	park     int32       // index into analyzer.parks while blocked, or -1
	// unplaced is set when g was woken from a wait the trace gave no stack
	// for (a goroutine first described lazily, by its wake): the next stack
	// it shows places that wake.
	unplaced bool
	wait     int32    // index into analyzer.waits while waiting or in a system call, or -1
	req      *request // the HTTP request it is serving, if known
	samples  int      // CPU profile samples taken in its current run
}

type siteKey struct{ creator, start xtrace.Stack }

type analyzer struct {
	sum          Summary
	transitions  int
	first        xtrace.Time
	last         xtrace.Time
	started      bool
	syncTime     xtrace.Time
	gs           map[xtrace.GoID]*goroutine
	live         int
	sched        *hist
	netpoll      *hist
	lifetime     *hist
	mark         *hist
	stw          *hist
	gcStart      xtrace.Time
	gcPartial    bool
	gcActive     bool
	stwStart     xtrace.Time
	stwActive    bool
	stwWait      stwState
	holdouts     []Holdout
	holdoutIndex map[string]int
	longRuns     []LongRun
	longRunIndex map[string]int
	assists      map[xtrace.GoID]xtrace.Time
	sites        []Site
	siteIndex    map[string]int32
	stackCache   map[siteKey]int32 // per generation: stacks are tables of one generation
	locks        []LockSite
	lockIndex    map[Frame]int32
	lockCache    map[xtrace.Stack]int32 // blocking stack -> lock index + 1, 0 if not a lock
	parks        []ParkSite
	parkIndex    map[Frame]int32
	parkFuncs    map[string]int32       // a wait site of each function
	parkCache    map[xtrace.Stack]int32 // per generation, like stackCache
	waits        []WaitSite
	waitIndex    map[string]int32
	waitCache    map[waitKey]int32 // per generation, as stackCache
	kinds        []siteKind        // per wait site
	paths        map[string]*pathAcc
}

func newAnalyzer() *analyzer {
	return &analyzer{
		sum: Summary{
			Blocked:         map[Reason]time.Duration{},
			BlockedByReason: map[string]time.Duration{},
			GC:              GC{STWByReason: map[string]time.Duration{}},
		},
		gs:           map[xtrace.GoID]*goroutine{},
		sched:        newHist(),
		netpoll:      newHist(),
		lifetime:     newHist(),
		mark:         newHist(),
		stw:          newHist(),
		assists:      map[xtrace.GoID]xtrace.Time{},
		siteIndex:    map[string]int32{},
		stackCache:   map[siteKey]int32{},
		lockIndex:    map[Frame]int32{},
		lockCache:    map[xtrace.Stack]int32{},
		parkIndex:    map[Frame]int32{},
		parkFuncs:    map[string]int32{},
		parkCache:    map[xtrace.Stack]int32{},
		waitIndex:    map[string]int32{},
		waitCache:    map[waitKey]int32{},
		paths:        map[string]*pathAcc{},
		holdoutIndex: map[string]int{},
		longRunIndex: map[string]int{},
	}
}

func (a *analyzer) elapsed() time.Duration { return a.last.Sub(a.first) }

func (a *analyzer) event(ev xtrace.Event) {
	t := ev.Time()
	if !a.started {
		a.first, a.started = t, true
	}
	if t > a.last {
		a.last = t
	}
	a.sum.Events++
	switch ev.Kind() {
	case xtrace.EventSync:
		a.syncTime = t
		clear(a.stackCache)
		clear(a.lockCache)
		clear(a.parkCache)
		clear(a.waitCache)
	case xtrace.EventMetric:
		m := ev.Metric()
		if m.Value.Kind() != xtrace.ValueUint64 {
			break
		}
		switch m.Name {
		case "/sched/gomaxprocs:threads":
			a.sum.GOMAXPROCS = int(m.Value.Uint64())
		case "/gc/heap/goal:bytes":
			a.sum.GC.HeapGoal = m.Value.Uint64()
		case "/memory/classes/heap/objects:bytes":
			a.sum.GC.HeapObjects = m.Value.Uint64()
		}
	case xtrace.EventStackSample:
		a.sum.CPUSamples++
		if g := a.gs[ev.Goroutine()]; g != nil && g.state == xtrace.GoRunning {
			g.samples++
		}
		if a.stwActive {
			a.stwSample(ev.Goroutine())
		}
	case xtrace.EventRangeBegin, xtrace.EventRangeActive, xtrace.EventRangeEnd:
		a.rangeEvent(ev, t)
	case xtrace.EventStateTransition:
		st := ev.StateTransition()
		if st.Resource.Kind == xtrace.ResourceGoroutine {
			a.transitions++
			a.transition(ev, st, t)
		}
	}
}

func (a *analyzer) rangeEvent(ev xtrace.Event, t xtrace.Time) {
	r := ev.Range()
	begin, active, end := ev.Kind() == xtrace.EventRangeBegin, ev.Kind() == xtrace.EventRangeActive, ev.Kind() == xtrace.EventRangeEnd
	switch {
	case r.Name == "GC concurrent mark phase":
		switch {
		case begin:
			a.sum.GC.Cycles++
			a.gcStart, a.gcActive, a.gcPartial = t, true, false
		case active && !a.gcActive:
			a.gcStart, a.gcActive, a.gcPartial = a.syncTime, true, true
		case end && a.gcActive:
			d := t.Sub(a.gcStart)
			a.sum.GC.MarkTime += d
			if !a.gcPartial {
				a.mark.record(d)
			}
			a.gcActive = false
		}
	case strings.HasPrefix(r.Name, "stop-the-world ("):
		reason := strings.TrimSuffix(strings.TrimPrefix(r.Name, "stop-the-world ("), ")")
		switch {
		case begin:
			a.stwStart, a.stwActive = t, true
			a.stwBegin(ev.Goroutine())
		case end && a.stwActive:
			a.stwActive = false
			if strings.Contains(reason, "trace") {
				break // the tracer's own pause at start and stop
			}
			d := t.Sub(a.stwStart)
			a.stwEnd(d)
			a.stw.record(d)
			a.sum.GC.STWByReason[reason] += d
		}
	case r.Name == "GC mark assist":
		g := r.Scope.Goroutine()
		switch {
		case begin:
			a.assists[g] = t
		case active:
			a.assists[g] = a.syncTime
		case end:
			if t0, ok := a.assists[g]; ok {
				a.sum.GC.Assist += t.Sub(t0)
				delete(a.assists, g)
			}
		}
	}
}

func (a *analyzer) transition(ev xtrace.Event, st xtrace.StateTransition, t xtrace.Time) {
	id := st.Resource.Goroutine()
	from, to := st.Goroutine()
	if from == to {
		return
	}
	g := a.gs[id]
	switch {
	case g == nil && (from == xtrace.GoNotExist || from == xtrace.GoUndetermined):
		if to == xtrace.GoNotExist {
			return
		}
		g = &goroutine{site: -1, park: -1, wait: -1}
		a.gs[id] = g
		a.live++
		a.sum.Goroutines.Max = max(a.sum.Goroutines.Max, a.live)
		if from == xtrace.GoNotExist {
			g.created = t
			a.sum.Goroutines.Created++
			g.site = a.site(ev, st)
		} else {
			// First seen: it has been in its state since before we know.
			a.sum.Goroutines.AtStart++
			g.since, g.censored = a.syncTime, true
			if g.since == 0 || g.since > t {
				g.since = t
			}
			g.state = to
			if to == xtrace.GoWaiting {
				g.reason = st.Reason // often empty: the reason is not repeated in status events
				a.blockAt(g, st)
			}
			return
		}
	case g == nil:
		// A goroutine we did not see start: from here on it is known.
		g = &goroutine{site: -1, park: -1, wait: -1, since: t, censored: true}
		a.gs[id] = g
		a.live++
		a.sum.Goroutines.AtStart++
		a.sum.Goroutines.Max = max(a.sum.Goroutines.Max, a.live)
	default:
		a.leave(g, to, t)
	}
	if a.stwActive && from == xtrace.GoRunning {
		a.stwStop(id, g, ev.Stack(), t)
	}
	if g.unplaced && from == xtrace.GoRunning {
		a.placeWake(g, ev.Stack())
	}
	if from == xtrace.GoRunning && !g.censored {
		if d := t.Sub(g.since); d >= longRunMin {
			a.longRun(g, ev.Stack(), d)
		}
	}
	g.samples = 0

	g.state, g.since, g.censored = to, t, false
	g.lock = 0
	switch to {
	case xtrace.GoWaiting:
		g.reason = st.Reason
		if Category(st.Reason) == ReasonSync {
			g.lock = a.lockSite(ev.Stack())
		}
		a.blockAt(g, st)
		if st.Reason == "forever" {
			a.exit(id, g, t, false)
			break
		}
		g.wait = a.waitSite(ev, st, st.Reason)
		a.waitBegins(g, g.wait, t)
	case xtrace.GoRunnable:
		g.netReady = from == xtrace.GoWaiting && g.reason == "network"
	case xtrace.GoSyscall:
		g.wait = a.waitSite(ev, st, "syscall")
		a.waitBegins(g, g.wait, t)
	case xtrace.GoNotExist:
		a.exit(id, g, t, true)
	}
}

// leave accounts the time g spent in its current state up to t, when it
// moves to the state to (or to GoUndetermined at the end of the trace).
func (a *analyzer) leave(g *goroutine, to xtrace.GoState, t xtrace.Time) {
	d := t.Sub(g.since)
	if d < 0 {
		d = 0
	}
	var site *Site
	if g.site >= 0 {
		site = &a.sites[g.site]
	}
	switch g.state {
	case xtrace.GoRunning:
		a.sum.Running += d
		if site != nil {
			site.Running += d
		}
	case xtrace.GoRunnable:
		a.sum.Runnable += d
		if to == xtrace.GoRunning && !g.censored {
			a.sched.record(d)
			if g.netReady {
				a.netpoll.record(d)
			}
		}
		g.netReady = false
	case xtrace.GoWaiting:
		woken := to != xtrace.GoUndetermined && to != xtrace.GoNotExist
		if g.park >= 0 && woken {
			a.parks[g.park].Woken++
		}
		g.unplaced = g.park < 0 && woken && g.censored
		g.park = -1
		c := Category(g.reason)
		a.sum.Blocked[c] += d
		a.sum.BlockedByReason[g.reason] += d
		if g.lock > 0 {
			a.sum.LockWait += d
			a.locks[g.lock-1].Wait += d
		}
		if site != nil && c != ReasonRuntime {
			site.Blocked += d
		}
		if !g.censored && c != ReasonRuntime {
			a.waitDone(g.wait, d)
			a.waitEnds(g, g.wait, d, t, to)
		}
		g.wait = -1
	case xtrace.GoSyscall:
		a.sum.Blocked[ReasonSyscall] += d
		a.sum.BlockedByReason["syscall"] += d
		if site != nil {
			site.Blocked += d
		}
		if !g.censored {
			a.waitDone(g.wait, d)
			a.waitEnds(g, g.wait, d, t, to)
		}
		g.wait = -1
	}
}

func (a *analyzer) exit(id xtrace.GoID, g *goroutine, t xtrace.Time, ended bool) {
	delete(a.gs, id)
	a.live--
	if g.created == 0 || !ended {
		return
	}
	life := t.Sub(g.created)
	a.sum.Goroutines.Ended++
	a.lifetime.record(life)
	if g.site >= 0 {
		a.sites[g.site].Ended++
		a.sites[g.site].Life += life
	}
}

// site finds or adds the creation site of a goroutine being created.
func (a *analyzer) site(ev xtrace.Event, st xtrace.StateTransition) int32 {
	key := siteKey{creator: ev.Stack(), start: st.Stack}
	if i, ok := a.stackCache[key]; ok {
		if i >= 0 {
			a.sites[i].Created++
		} else {
			a.sum.Goroutines.SitesDropped++
		}
		return i
	}
	var frames []Frame
	var b strings.Builder
	for f := range key.creator.Frames() {
		if len(frames) == siteFrames {
			break
		}
		frames = append(frames, Frame{Func: f.Func, File: f.File, Line: int64(f.Line)})
		fmt.Fprintf(&b, "%s:%d;", f.Func, f.Line)
	}
	entry := ""
	for f := range key.start.Frames() {
		entry = f.Func // the outermost frame is the entry function
	}
	b.WriteString(entry)
	i, ok := a.siteIndex[b.String()]
	if !ok {
		if len(a.sites) >= MaxSites {
			i = -1
		} else {
			i = int32(len(a.sites))
			a.sites = append(a.sites, Site{Stack: frames, Entry: entry})
			a.siteIndex[b.String()] = i
		}
	}
	a.stackCache[key] = i
	if i < 0 {
		a.sum.Goroutines.SitesDropped++
		return -1
	}
	a.sites[i].Created++
	return i
}

// lockSite finds or adds the lock acquisition a goroutine blocked at, and
// counts the block: 1 + its index, or 0 when the stack is not a lock's.
func (a *analyzer) lockSite(stk xtrace.Stack) int32 {
	i, ok := a.lockCache[stk]
	if !ok {
		locking := false
		for f := range stk.Frames() {
			if !locking {
				locking = slices.Contains(lockFrames, f.Func)
				continue
			}
			if strings.HasPrefix(f.Func, "sync.") || strings.HasPrefix(f.Func, "internal/sync.") || strings.HasPrefix(f.Func, "runtime.") {
				continue
			}
			fr := Frame{Func: f.Func, File: f.File, Line: int64(f.Line)}
			j, ok := a.lockIndex[fr]
			if !ok && len(a.locks) < MaxSites {
				j = int32(len(a.locks))
				a.locks = append(a.locks, LockSite{Frame: fr})
				a.lockIndex[fr] = j
				ok = true
			}
			if ok {
				i = j + 1
			}
			break
		}
		a.lockCache[stk] = i
	}
	if i > 0 {
		a.locks[i-1].Blocks++
	}
	return i
}

// blockAt records where g blocked: the first frame of its stack outside
// the runtime, sync and time, so that a channel send, a semaphore acquire
// and a WaitGroup wait are each named by the code that waits.
func (a *analyzer) blockAt(g *goroutine, st xtrace.StateTransition) {
	i, ok := a.parkCache[st.Stack]
	if !ok {
		i = -1
		for f := range st.Stack.Frames() {
			if WaitMechanics(f.Func) {
				continue
			}
			fr := Frame{Func: f.Func, File: f.File, Line: int64(f.Line)}
			j, known := a.parkIndex[fr]
			if !known {
				if len(a.parks) >= MaxSites {
					break
				}
				j = int32(len(a.parks))
				a.parks = append(a.parks, ParkSite{Frame: fr, Reason: st.Reason})
				a.parkIndex[fr] = j
				if _, ok := a.parkFuncs[fr.Func]; !ok {
					a.parkFuncs[fr.Func] = j
				}
			}
			i = j
			break
		}
		a.parkCache[st.Stack] = i
	}
	g.park = i
	if i >= 0 {
		a.parks[i].Blocked++
	}
}

// placeWake credits a wake whose wait the trace did not place to the wait
// site of a caller on g's next stack (the innermost application frame is
// where g is now, not where it waited): a goroutine woken from a queue is
// next seen working below the function that waited.
func (a *analyzer) placeWake(g *goroutine, st xtrace.Stack) {
	g.unplaced = false
	first := true
	for f := range st.Frames() {
		if WaitMechanics(f.Func) {
			continue
		}
		if first {
			first = false
			continue
		}
		if i, ok := a.parkFuncs[f.Func]; ok {
			a.parks[i].Woken++
			return
		}
	}
}

// WaitMechanics reports frames that are the mechanics of blocking, not the
// code that blocks.
func WaitMechanics(fn string) bool {
	for _, p := range []string{"runtime.", "sync.", "internal/", "time.Sleep", "sync/atomic."} {
		if strings.HasPrefix(fn, p) {
			return true
		}
	}
	return false
}

func (a *analyzer) finish() *Summary {
	s := &a.sum
	end := a.last
	for _, g := range a.gs {
		if g.state == xtrace.GoWaiting && g.park >= 0 {
			a.parks[g.park].Still++
		}
		a.leave(g, xtrace.GoUndetermined, end)
	}
	parks := a.parks
	sort.SliceStable(parks, func(i, j int) bool { return parks[i].Blocked > parks[j].Blocked })
	s.Parks = parks
	if a.gcActive {
		s.GC.MarkTime += end.Sub(a.gcStart)
	}
	for _, t0 := range a.assists {
		s.GC.Assist += end.Sub(t0)
	}
	s.Window = a.elapsed()
	s.Goroutines.AtEnd = a.live
	if s.Window > 0 {
		s.Goroutines.CreatedPerSec = float64(s.Goroutines.Created) / s.Window.Seconds()
	}
	s.SchedLatency = a.sched.dist()
	s.NetPollLatency = a.netpoll.dist()
	s.Goroutines.Lifetime = a.lifetime.dist()
	s.GC.Mark = a.mark.dist()
	s.GC.STW = a.stw.dist()
	s.GC.Holdouts = a.sortedHoldouts()
	s.GC.LongRuns = a.sortedLongRuns()
	sites := a.sites
	sort.SliceStable(sites, func(i, j int) bool { return sites[i].Created > sites[j].Created })
	s.Goroutines.Sites = sites
	locks := a.locks
	sort.SliceStable(locks, func(i, j int) bool { return locks[i].Wait > locks[j].Wait })
	s.LockSites = locks
	var order []int
	s.Waits, order = a.sortedWaits()
	s.Requests = a.requestPaths(order)
	return s
}

// hist records durations in a fixed-size histogram (1 ns to 1 h, two
// significant digits) plus the exact count, total and maximum.
type hist struct {
	h     *hdrhistogram.Histogram
	n     int64
	total time.Duration
	max   time.Duration
}

func newHist() *hist { return &hist{h: hdrhistogram.New(1, int64(time.Hour), 2)} }

func (h *hist) record(d time.Duration) {
	d = max(d, 0)
	h.n++
	h.total += d
	h.max = max(h.max, d)
	_ = h.h.RecordValue(min(max(int64(d), 1), int64(time.Hour)))
}

func (h *hist) dist() Dist {
	if h.n == 0 {
		return Dist{}
	}
	q := func(p float64) time.Duration { return min(time.Duration(h.h.ValueAtQuantile(p)), h.max) }
	return Dist{
		Count: h.n,
		Mean:  h.total / time.Duration(h.n),
		P50:   q(50),
		P90:   q(90),
		P99:   q(99),
		Max:   h.max,
		Total: h.total,
	}
}

// String formats the distribution for people: "p50 1.2ms, p90 ..., max ...".
func (d Dist) String() string {
	if d.Count == 0 {
		return "none"
	}
	r := func(v time.Duration) string { return roundDur(v).String() }
	return fmt.Sprintf("p50 %s, p90 %s, p99 %s, max %s (n=%d)", r(d.P50), r(d.P90), r(d.P99), r(d.Max), d.Count)
}

func roundDur(d time.Duration) time.Duration {
	switch {
	case d >= time.Second:
		return d.Round(time.Millisecond)
	case d >= time.Millisecond:
		return d.Round(10 * time.Microsecond)
	case d >= time.Microsecond:
		return d.Round(10 * time.Nanosecond)
	}
	return d
}
