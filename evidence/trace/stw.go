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
	if d < holdoutMinPause || w.last == 0 || w.stack == xtrace.NoStack {
		return
	}
	held := w.last.Sub(a.stwStart)
	if held < time.Duration(holdoutShare*float64(d)) {
		return
	}
	var frames []Frame
	var key strings.Builder
	for f := range w.stack.Frames() {
		if strings.HasPrefix(f.Func, "runtime.") {
			continue
		}
		if len(frames) == holdoutFrames {
			break
		}
		frames = append(frames, Frame{Func: f.Func, File: f.File, Line: int64(f.Line)})
		key.WriteString(f.Func + ";")
	}
	if len(frames) == 0 {
		return
	}
	k := key.String()
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

// sortedHoldouts returns the holdouts, longest wait first.
func (a *analyzer) sortedHoldouts() []Holdout {
	hs := a.holdouts
	sort.SliceStable(hs, func(i, j int) bool { return hs[i].Wait > hs[j].Wait })
	return hs
}
