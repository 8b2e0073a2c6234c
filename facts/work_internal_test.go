package facts

import (
	"math"
	"testing"

	"github.com/perfdoctor/perfdoctor/bundle"
)

// A server whose work runs in its children: each child seen at both ends
// counts its difference, one born in the window all of its time, and one
// that exited what its parent's reaped-children time gained beyond what
// it had used at the start; a PID reused by a new process is a new child.
func TestDescendantsCPU(t *testing.T) {
	proc := func(pid int, cpu, start, reaped float64) bundle.ProcessInfo {
		return bundle.ProcessInfo{PID: pid, UserCPUSeconds: cpu, StartTime: start, ExitedChildrenCPUSeconds: reaped}
	}
	parentStart, parentEnd := proc(1, 0.1, 100, 5), proc(1, 0.1, 100, 8) // 3 s reaped in the window
	start := &bundle.SystemSnapshot{Process: &parentStart, Children: []bundle.ProcessInfo{
		proc(10, 2, 101, 0), // busy backend, seen at both ends
		proc(11, 1, 101, 0), // exits in the window, 1 s used before it
		proc(12, 4, 101, 0), // its PID reused by a new process at the end
	}}
	end := &bundle.SystemSnapshot{Process: &parentEnd, Children: []bundle.ProcessInfo{
		proc(10, 5, 101, 0),    // +3
		proc(13, 0.5, 150, 0),  // born in the window: 0.5
		proc(12, 0.25, 160, 0), // a new process: 0.25
	}}
	// 3 + 0.5 + 0.25 + (3 reaped - 1 and 4 the gone ones had: 0) = 3.75
	if got := descendantsCPU(start, end); math.Abs(got-3.75) > 1e-9 {
		t.Errorf("descendantsCPU = %v, want 3.75", got)
	}
	if got := descendantsCPU(&bundle.SystemSnapshot{Process: &parentStart}, &bundle.SystemSnapshot{Process: &parentEnd}); got != 0 {
		t.Errorf("no children: %v, want 0", got)
	}
}

// The tree's time split into user and system, reaped children's time (one
// figure in the kernel) split as the living descendants' is.
func TestDescendantTimes(t *testing.T) {
	proc := func(pid int, user, system, reaped float64) bundle.ProcessInfo {
		return bundle.ProcessInfo{PID: pid, UserCPUSeconds: user, SystemCPUSeconds: system, StartTime: 100, ExitedChildrenCPUSeconds: reaped}
	}
	parentStart, parentEnd := proc(1, 0, 0, 0), proc(1, 0, 0, 2) // 2 s reaped from a child born and gone in the window
	start := &bundle.SystemSnapshot{Process: &parentStart, Children: []bundle.ProcessInfo{proc(10, 1, 1, 0)}}
	end := &bundle.SystemSnapshot{Process: &parentEnd, Children: []bundle.ProcessInfo{proc(10, 2, 4, 0)}} // +1 user, +3 system
	user, system := DescendantTimes(start, end)
	if math.Abs(user-1.5) > 1e-9 || math.Abs(system-4.5) > 1e-9 {
		t.Errorf("DescendantTimes = %v user, %v system, want 1.5 and 4.5 (the reaped 2 s split 1:3)", user, system)
	}
}
