package trace

import (
	"fmt"
	"sort"
	"strings"
	"time"

	xtrace "golang.org/x/exp/trace"
)

// SyscallSite is a place goroutines entered system calls from, with the
// time they spent in them: the off-CPU time a CPU profile does not see
// (an fsync waiting for the disk, a blocking read).
type SyscallSite struct {
	// Stack is the goroutine's stack on entering the call, leaf first, at
	// most syscallFrames frames: deep enough to reach a request handler's
	// server frames.
	Stack []Frame
	Count int64
	Total time.Duration // time in the calls, summed
	Max   time.Duration
}

// Mean is the average time in one call.
func (s SyscallSite) Mean() time.Duration {
	if s.Count == 0 {
		return 0
	}
	return s.Total / time.Duration(s.Count)
}

// HasFunc reports whether any frame of the site's stack satisfies match.
func (s SyscallSite) HasFunc(match func(string) bool) bool {
	for _, f := range s.Stack {
		if match(f.Func) {
			return true
		}
	}
	return false
}

const (
	syscallFrames = 32
	// MaxSyscallSites bounds the table; calls from further sites are
	// counted in Summary.SyscallsDropped.
	MaxSyscallSites = 512
)

// syscallSite finds or adds the site of a goroutine entering a system call.
func (a *analyzer) syscallSite(ev xtrace.Event, st xtrace.StateTransition) int32 {
	stack := ev.Stack()
	if stack == xtrace.NoStack {
		stack = st.Stack
	}
	if i, ok := a.sysCache[stack]; ok {
		return i
	}
	var frames []Frame
	var b strings.Builder
	for f := range stack.Frames() {
		if len(frames) == syscallFrames {
			break
		}
		frames = append(frames, Frame{Func: f.Func, File: f.File, Line: int64(f.Line)})
		fmt.Fprintf(&b, "%s:%d;", f.Func, f.Line)
	}
	i, ok := a.sysIndex[b.String()]
	if !ok {
		if len(a.syscalls) >= MaxSyscallSites {
			i = -1
		} else {
			i = int32(len(a.syscalls))
			a.syscalls = append(a.syscalls, SyscallSite{Stack: frames})
			a.sysIndex[b.String()] = i
		}
	}
	a.sysCache[stack] = i
	return i
}

// syscallDone accounts one call of d at site i (-1: not kept).
func (a *analyzer) syscallDone(i int32, d time.Duration) {
	if i < 0 {
		a.sum.SyscallsDropped++
		return
	}
	s := &a.syscalls[i]
	s.Count++
	s.Total += d
	s.Max = max(s.Max, d)
}

// sortedSyscalls returns the sites with calls, most time first.
func (a *analyzer) sortedSyscalls() []SyscallSite {
	var out []SyscallSite
	for _, s := range a.syscalls {
		if s.Count > 0 {
			out = append(out, s)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Total > out[j].Total })
	return out
}
