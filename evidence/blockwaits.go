package evidence

import (
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/perfdoctor/perfdoctor/evidence/trace"
)

// BlockWaits is where goroutines waited off the CPU according to the block
// profile: the second source of off-CPU time, for evidence without an
// execution trace (a folder of profiles saved with curl, a service whose
// trace endpoint is off). It sees waits on locks, channels, select,
// sync.Cond and WaitGroups, and client calls that wait on a channel for
// their reply (net/http's Transport, gRPC); not system calls, network reads
// made by the waiting goroutine itself, or sleeps.
type BlockWaits struct {
	// Window is the span the profile covers when it is a delta
	// (/debug/pprof/block?seconds=N, as perfdoctor collect takes it); 0 when
	// it counts since the process enabled block profiling.
	Window time.Duration
	Total  time.Duration // time blocked, all sites
	Sites  []BlockSite   // most time first
}

// BlockSite is one stack goroutines blocked at.
type BlockSite struct {
	// Stack is leaf first: the blocking mechanism, then the code that waited.
	Stack []Frame
	// Mechanism is what the goroutine waited on: "lock", "channel",
	// "select", "cond", "waitgroup" or "other".
	Mechanism string
	Delay     time.Duration
	Count     int64
}

// PerSecond is the site's blocked time per second of the window: the
// average number of goroutines waiting there. 0 without a window.
func (w *BlockWaits) PerSecond(d time.Duration) float64 {
	if w.Window <= 0 {
		return 0
	}
	return d.Seconds() / w.Window.Seconds()
}

// Where is the first frame of the site outside the blocking mechanism (the
// runtime, sync, time): the code that waited.
func (s BlockSite) Where() Frame {
	for _, f := range s.Stack {
		if !trace.WaitMechanics(f.Func) {
			return f
		}
	}
	if len(s.Stack) > 0 {
		return s.Stack[len(s.Stack)-1]
	}
	return Frame{}
}

// HasFunc reports whether a frame of the site's stack satisfies match.
func (s BlockSite) HasFunc(match func(string) bool) bool {
	for _, f := range s.Stack {
		if match(f.Func) {
			return true
		}
	}
	return false
}

// mechanism names what a blocking stack waited on from its leaf frames.
func mechanism(stack []Frame) string {
	for _, f := range stack {
		switch {
		case strings.HasPrefix(f.Func, "runtime.selectgo"):
			return "select"
		case strings.HasPrefix(f.Func, "runtime.chansend"), strings.HasPrefix(f.Func, "runtime.chanrecv"):
			return "channel"
		case strings.Contains(f.Func, "(*Cond).Wait"):
			return "cond"
		case strings.Contains(f.Func, "(*WaitGroup).Wait"):
			return "waitgroup"
		case strings.Contains(f.Func, "Mutex).Lock"), strings.Contains(f.Func, "Mutex).RLock"), strings.HasPrefix(f.Func, "sync.runtime_SemacquireMutex"), strings.HasPrefix(f.Func, "sync.runtime_SemacquireRWMutex"):
			return "lock"
		}
	}
	return "other"
}

// BlockWaits summarises the block profile, or returns false when the
// evidence has none or it recorded nothing (the target never called
// runtime.SetBlockProfileRate).
func (e *Evidence) BlockWaits() (*BlockWaits, bool) {
	p := e.Profiles[Block]
	if p == nil {
		return nil, false
	}
	delay := sampleIndex(p, "delay")
	count := sampleIndex(p, "contentions")
	if delay < 0 || count < 0 {
		return nil, false
	}
	w := &BlockWaits{Window: time.Duration(p.DurationNanos)}
	bySite := map[string]int{}
	for _, s := range p.Sample {
		d := time.Duration(s.Value[delay])
		if d <= 0 {
			continue // a delta's sites that did not block in the window
		}
		var stack []Frame
		var key strings.Builder
		for _, loc := range s.Location {
			for _, ln := range loc.Line {
				if ln.Function == nil {
					continue
				}
				stack = append(stack, Frame{Func: ln.Function.Name, File: ln.Function.Filename, Line: ln.Line})
				key.WriteString(ln.Function.Name + ":" + strconv.FormatInt(ln.Line, 10) + ";")
			}
		}
		i, ok := bySite[key.String()]
		if !ok {
			i = len(w.Sites)
			bySite[key.String()] = i
			w.Sites = append(w.Sites, BlockSite{Stack: stack, Mechanism: mechanism(stack)})
		}
		w.Sites[i].Delay += d
		w.Sites[i].Count += s.Value[count]
		w.Total += d
	}
	if len(w.Sites) == 0 {
		return nil, false
	}
	sort.SliceStable(w.Sites, func(i, j int) bool { return w.Sites[i].Delay > w.Sites[j].Delay })
	return w, true
}
