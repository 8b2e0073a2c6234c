package trace

import (
	"fmt"
	"sort"
	"strings"
	"time"

	xtrace "golang.org/x/exp/trace"
)

// WaitSite is a place goroutines waited off the CPU, with why and for how
// long: a system call (an fsync waiting for the disk), the network poller
// (a read from a downstream), a channel, a lock. This is the time a CPU
// profile does not see.
type WaitSite struct {
	// Reason is "syscall" for system calls, else the runtime's block
	// reason ("network", "select", "chan receive", "sync", ...).
	Reason string
	// Stack is the goroutine's stack where it blocked, leaf first, at most
	// waitFrames frames: deep enough to reach a request handler's server
	// frames.
	Stack []Frame
	Count int64
	Total time.Duration // time waited, summed
	Max   time.Duration
}

// Mean is the average time of one wait.
func (s WaitSite) Mean() time.Duration {
	if s.Count == 0 {
		return 0
	}
	return s.Total / time.Duration(s.Count)
}

// HasFunc reports whether any frame of the site's stack satisfies match.
func (s WaitSite) HasFunc(match func(string) bool) bool {
	for _, f := range s.Stack {
		if match(f.Func) {
			return true
		}
	}
	return false
}

const (
	waitFrames = 48
	// MaxWaitSites bounds the table; waits at further sites are counted in
	// Summary.WaitsDropped.
	MaxWaitSites = 1024
)

type waitKey struct {
	reason string
	stack  xtrace.Stack
}

// waitSite finds or adds the site of a goroutine starting to wait.
func (a *analyzer) waitSite(ev xtrace.Event, st xtrace.StateTransition, reason string) int32 {
	stack := ev.Stack()
	if stack == xtrace.NoStack {
		stack = st.Stack
	}
	key := waitKey{reason, stack}
	if i, ok := a.waitCache[key]; ok {
		return i
	}
	var frames []Frame
	var b strings.Builder
	b.WriteString(reason + ";")
	for f := range stack.Frames() {
		if len(frames) == waitFrames {
			break
		}
		frames = append(frames, Frame{Func: f.Func, File: f.File, Line: int64(f.Line)})
		fmt.Fprintf(&b, "%s:%d;", f.Func, f.Line)
	}
	i, ok := a.waitIndex[b.String()]
	if !ok {
		if len(a.waits) >= MaxWaitSites {
			i = -1
		} else {
			i = int32(len(a.waits))
			a.waits = append(a.waits, WaitSite{Reason: reason, Stack: frames})
			a.kinds = append(a.kinds, classifySite(frames))
			a.waitIndex[b.String()] = i
		}
	}
	a.waitCache[key] = i
	return i
}

// waitDone accounts one wait of d at site i (-1: not kept).
func (a *analyzer) waitDone(i int32, d time.Duration) {
	if i < 0 {
		a.sum.WaitsDropped++
		return
	}
	s := &a.waits[i]
	s.Count++
	s.Total += d
	s.Max = max(s.Max, d)
}

// sortedWaits returns the sites with waits, most time first, and for each
// site of the table its index in that list (-1 if it had no waits).
func (a *analyzer) sortedWaits() ([]WaitSite, []int) {
	var idx []int
	for i, s := range a.waits {
		if s.Count > 0 {
			idx = append(idx, i)
		}
	}
	sort.SliceStable(idx, func(i, j int) bool { return a.waits[idx[i]].Total > a.waits[idx[j]].Total })
	out := make([]WaitSite, len(idx))
	order := make([]int, len(a.waits))
	for i := range order {
		order[i] = -1
	}
	for j, i := range idx {
		out[j] = a.waits[i]
		order[i] = j
	}
	return out, order
}

// Syscalls are the wait sites in system calls.
func (s *Summary) Syscalls() []WaitSite {
	var out []WaitSite
	for _, w := range s.Waits {
		if w.Reason == "syscall" {
			out = append(out, w)
		}
	}
	return out
}
