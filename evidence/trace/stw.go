package trace

import (
	"sort"
	"strings"
	"time"

	xtrace "golang.org/x/exp/trace"
)

// Holdout is code that kept running while the runtime stopped the world:
// the goroutine the stop waited for last. Go preempts goroutines at
// function calls and, asynchronously, almost anywhere in Go code, but not
// inside the runtime's assembly (a large copy is one runtime.memmove) or
// other assembly: a stop-the-world lasts until such a call returns, and
// every goroutine waits with it.
type Holdout struct {
	// Stack is where the goroutine stopped, leaf first, runtime frames
	// left out: the code that had just finished the non-preemptible work.
	Stack []Frame
	// Entry is the function the goroutine was started with, if known.
	Entry  string
	Pauses int           // stop-the-world pauses that waited for it
	Wait   time.Duration // how long those pauses waited for it, summed
	Max    time.Duration
	// CPUSamples counts the CPU profile samples the goroutine took while
	// the pauses waited for it (when a CPU profile ran with the trace):
	// the proof it was running. A goroutine whose thread the OS had taken
	// off an oversubscribed CPU holds a pause too, without samples.
	CPUSamples int
}

const (
	// holdoutMinPause is the shortest stop-the-world examined: shorter
	// ones are the runtime's ordinary work.
	holdoutMinPause = 2 * time.Millisecond
	// holdoutShare is how much of a pause must pass before the last
	// goroutine stops for the pause to be blamed on it.
	holdoutShare  = 0.5
	holdoutFrames = 8
)

// stwState follows one stop-the-world pause: which goroutine stopped
// last, and where.
type stwState struct {
	stopper xtrace.GoID
	last    xtrace.Time
	g       xtrace.GoID // the goroutine that stopped last
	stack   xtrace.Stack
	entry   string
	samples map[xtrace.GoID]int // CPU samples per goroutine during the pause
}

// stwBegin starts following a pause requested by goroutine stopper.
func (a *analyzer) stwBegin(stopper xtrace.GoID) {
	a.stwWait = stwState{stopper: stopper}
}

// stwSample counts a CPU profile sample of goroutine g during a pause.
func (a *analyzer) stwSample(g xtrace.GoID) {
	if a.stwWait.samples == nil {
		a.stwWait.samples = map[xtrace.GoID]int{}
	}
	a.stwWait.samples[g]++
}

// stwStop notes goroutine id leaving the running state while the world
// is being stopped.
func (a *analyzer) stwStop(id xtrace.GoID, g *goroutine, stack xtrace.Stack, t xtrace.Time) {
	if id == a.stwWait.stopper || t < a.stwWait.last {
		return
	}
	a.stwWait.last, a.stwWait.g, a.stwWait.stack, a.stwWait.entry = t, id, stack, ""
	if g != nil && g.site >= 0 {
		a.stwWait.entry = a.sites[g.site].Entry
	}
}

// stwEnd blames a pause of d that ended at t on the goroutine that
// stopped last, when it stopped late enough in the pause.
func (a *analyzer) stwEnd(d time.Duration) {
	w := a.stwWait
	a.stwWait = stwState{}
	if d < holdoutMinPause || w.last == 0 {
		return
	}
	held := w.last.Sub(a.stwStart)
	if held < time.Duration(holdoutShare*float64(d)) {
		return
	}
	frames, k := appFrames(w.stack)
	if len(frames) == 0 {
		return
	}
	i, ok := a.holdoutIndex[k]
	if !ok {
		if len(a.holdouts) >= MaxSites {
			return
		}
		i = len(a.holdouts)
		a.holdouts = append(a.holdouts, Holdout{Stack: frames, Entry: w.entry})
		a.holdoutIndex[k] = i
	}
	h := &a.holdouts[i]
	h.Pauses++
	h.Wait += held
	h.Max = max(h.Max, held)
	h.CPUSamples += w.samples[w.g]
}

// LongRun is code a goroutine ran for 20 ms or more without giving up its
// P. The runtime asks a goroutine to yield after 10 ms on a P, and Go code
// stops within microseconds, so a longer run is code that cannot be
// preempted (a huge copy or clear, assembly), or a thread the OS took off
// its CPU: CPUSamples tells the two apart. Every stop-the-world that
// starts during such a run waits for its end, so a 1 s trace that caught no
// long pause still shows what the window's long pauses waited for.
type LongRun struct {
	// Stack is where the goroutine stopped running, leaf first, runtime
	// frames left out.
	Stack []Frame
	Entry string // the function the goroutine was started with, if known
	Runs  int
	Total time.Duration
	Max   time.Duration
	// CPUSamples counts the CPU profile samples taken in these runs (when a
	// CPU profile ran with the trace): the proof the goroutine was running.
	CPUSamples int
}

// longRunMin is the shortest run recorded: twice the 10 ms after which
// the runtime asks a goroutine to yield, as its monitor may sleep up to
// 10 ms between checks.
const longRunMin = 20 * time.Millisecond

// longRun records a run of d that goroutine g ended with stack.
func (a *analyzer) longRun(g *goroutine, stack xtrace.Stack, d time.Duration) {
	frames, k := appFrames(stack)
	if len(frames) == 0 {
		return // the runtime's own workers (dedicated GC marking) run long by design
	}
	i, ok := a.longRunIndex[k]
	if !ok {
		if len(a.longRuns) >= MaxSites {
			return
		}
		i = len(a.longRuns)
		r := LongRun{Stack: frames}
		if g.site >= 0 {
			r.Entry = a.sites[g.site].Entry
		}
		a.longRuns = append(a.longRuns, r)
		a.longRunIndex[k] = i
	}
	r := &a.longRuns[i]
	r.Runs++
	r.Total += d
	r.Max = max(r.Max, d)
	r.CPUSamples += g.samples
}

// appFrames is stack without runtime frames, at most holdoutFrames of
// them, and a key naming it.
func appFrames(stack xtrace.Stack) ([]Frame, string) {
	if stack == xtrace.NoStack {
		return nil, ""
	}
	var frames []Frame
	var key strings.Builder
	for f := range stack.Frames() {
		if strings.HasPrefix(f.Func, "runtime.") {
			continue
		}
		if len(frames) == holdoutFrames {
			break
		}
		frames = append(frames, Frame{Func: f.Func, File: f.File, Line: int64(f.Line)})
		key.WriteString(f.Func + ";")
	}
	return frames, key.String()
}

// sortedLongRuns returns the long runs, longest total first.
func (a *analyzer) sortedLongRuns() []LongRun {
	rs := a.longRuns
	sort.SliceStable(rs, func(i, j int) bool { return rs[i].Total > rs[j].Total })
	return rs
}

// sortedHoldouts returns the holdouts, longest wait first.
func (a *analyzer) sortedHoldouts() []Holdout {
	hs := a.holdouts
	sort.SliceStable(hs, func(i, j int) bool { return hs[i].Wait > hs[j].Wait })
	return hs
}
