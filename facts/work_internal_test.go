package facts

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/perfdoctor/perfdoctor/bundle"
	"github.com/perfdoctor/perfdoctor/evidence"
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

// ioProc is a process with its /proc/PID/io read and write system calls.
func ioProc(pid int, start float64, reads, writes uint64) bundle.ProcessInfo {
	return bundle.ProcessInfo{PID: pid, StartTime: start,
		IO: &bundle.ProcessIO{ReadSyscalls: reads, WriteSyscalls: writes, ReadChars: 100 * reads, WriteChars: 10 * writes}}
}

// treeSnapshots are two snapshots 10 s apart of a process and its children.
func treeSnapshots(parent0, parent1 bundle.ProcessInfo, children0, children1 []bundle.ProcessInfo) (*bundle.SystemSnapshot, *bundle.SystemSnapshot) {
	t0 := time.Unix(1000, 0)
	return &bundle.SystemSnapshot{Time: t0, Process: &parent0, Children: children0},
		&bundle.SystemSnapshot{Time: t0.Add(10 * time.Second), Process: &parent1, Children: children1}
}

// A server whose children do the I/O (nginx's workers, PostgreSQL's
// backends): the master's own counters stand still and the workers' are
// the work. A worker seen at both ends counts its difference, one born in
// the window all of its counters, and one that exited what it did after
// the start: the kernel adds its counters to its parent's when the parent
// reaps it, so the parent's gain holds its whole life, less its start.
func TestTreeIOChildrenDoTheWork(t *testing.T) {
	start, end := treeSnapshots(ioProc(1, 900, 40, 16), ioProc(1, 900, 40+800, 16+23000),
		[]bundle.ProcessInfo{
			ioProc(10, 901, 1000, 80000), // a worker, seen at both ends
			ioProc(11, 901, 500, 20000),  // exits in the window after 300 reads and 3,000 writes more
		},
		[]bundle.ProcessInfo{
			ioProc(10, 901, 1000+700, 80000+70000),
			ioProc(12, 1005, 50, 4000), // born in the window
		})
	d, ok := TreeIO(start, end)
	if !ok {
		t.Fatal("TreeIO not ok")
	}
	if want := uint64(300 + 700 + 50); d.ReadSyscalls != want {
		t.Errorf("read syscalls = %d, want %d", d.ReadSyscalls, want)
	}
	if want := uint64(3000 + 70000 + 4000); d.WriteSyscalls != want {
		t.Errorf("write syscalls = %d, want %d", d.WriteSyscalls, want)
	}
	if want := uint64(10 * (3000 + 70000 + 4000)); d.WriteChars != want {
		t.Errorf("write chars = %d, want %d", d.WriteChars, want)
	}
	if d.Descendants != 2 || d.Unread != 0 {
		t.Errorf("descendants %d unread %d, want 2 and 0", d.Descendants, d.Unread)
	}

	// Per unit, at 77 units/s over the 10 s: 1,000 writes a second is
	// 100 per unit, where the master alone did none.
	ev := &evidence.Evidence{SystemStart: start, SystemEnd: end,
		Load: &bundle.LoadResult{Throughput: 77, Unit: "request"}}
	w := workDone(ev, 0)
	if math.Abs(w.WritesPerUnit-100) > 1e-9 || math.Abs(w.ReadsPerUnit-1050.0/10/77) > 1e-9 {
		t.Errorf("per unit: %v reads, %v writes, want %v and 100", w.ReadsPerUnit, w.WritesPerUnit, 1050.0/10/77)
	}
	if w.IOLowerBound || !strings.Contains(w.IOSource, "with 2 descendants") {
		t.Errorf("source %q, lower bound %v", w.IOSource, w.IOLowerBound)
	}
	if s := w.Summary(); !strings.Contains(s, "1.4 reads and 100 writes per request") {
		t.Errorf("Summary = %q", s)
	}
}

// A child whose PID a new process took in the window: the old one exited
// (its parent's counters hold it) and the new one was born, and its small
// counters are not a difference against the old one's large ones.
func TestTreeIOReplacedChild(t *testing.T) {
	start, end := treeSnapshots(ioProc(1, 900, 0, 0), ioProc(1, 900, 5000+30, 900000+200),
		[]bundle.ProcessInfo{ioProc(12, 901, 5000, 900000)}, // exits after 30 reads and 200 writes more
		[]bundle.ProcessInfo{ioProc(12, 1004, 7, 60)})       // the same PID, a new process
	d, ok := TreeIO(start, end)
	if !ok {
		t.Fatal("TreeIO not ok")
	}
	if d.ReadSyscalls != 30+7 || d.WriteSyscalls != 200+60 {
		t.Errorf("TreeIO = %d reads, %d writes, want 37 and 260", d.ReadSyscalls, d.WriteSyscalls)
	}
}

// A process without children reads as it always did: its own difference.
func TestTreeIOSingleProcess(t *testing.T) {
	start, end := treeSnapshots(ioProc(1, 900, 100, 200), ioProc(1, 900, 100+2000, 200+4000), nil, nil)
	d, ok := TreeIO(start, end)
	if !ok || d.ReadSyscalls != 2000 || d.WriteSyscalls != 4000 || d.ReadChars != 200000 || d.WriteChars != 40000 || d.Descendants != 0 || d.Unread != 0 {
		t.Errorf("TreeIO = %+v, %v", d, ok)
	}
	ev := &evidence.Evidence{SystemStart: start, SystemEnd: end,
		Load: &bundle.LoadResult{Throughput: 200, Unit: "request"}}
	w := workDone(ev, 0)
	if w.ReadsPerUnit != 1 || w.WritesPerUnit != 2 || w.BytesInPerUnit != 100 || w.BytesOutPerUnit != 20 || w.IOSource != "/proc/PID/io" || w.IOLowerBound {
		t.Errorf("workDone = %+v", w)
	}
	if s := w.Summary(); s != "1.0 reads and 2.0 writes per request (200 requests/s)" {
		t.Errorf("Summary = %q", s)
	}
	// The process's own counters unread: no figures.
	start.Process.IO = nil
	if _, ok := TreeIO(start, end); ok {
		t.Error("TreeIO ok without the process's counters")
	}
}

// What cannot be read makes the figures a lower bound when it can only
// leave work out, and none at all when it could add work from before the
// window.
func TestTreeIOUnread(t *testing.T) {
	unread := func(p bundle.ProcessInfo) bundle.ProcessInfo { p.IO = nil; return p }
	parent0, parent1 := ioProc(1, 900, 0, 0), ioProc(1, 900, 0, 0)

	// A worker unreadable at the end, one born unreadable, and one first
	// seen at the end that started long before the start snapshot: all
	// left out, a lower bound.
	start, end := treeSnapshots(parent0, parent1,
		[]bundle.ProcessInfo{ioProc(10, 901, 10, 10), ioProc(11, 901, 10, 10)},
		[]bundle.ProcessInfo{ioProc(10, 901, 110, 1010), unread(ioProc(11, 901, 0, 0)),
			unread(ioProc(12, 1003, 0, 0)), ioProc(13, 950, 5000, 5000)})
	d, ok := TreeIO(start, end)
	if !ok || d.ReadSyscalls != 100 || d.WriteSyscalls != 1000 || d.Descendants != 1 || d.Unread != 3 {
		t.Errorf("TreeIO = %+v, %v; want 100 reads, 1000 writes, 1 descendant and 3 unread", d, ok)
	}
	ev := &evidence.Evidence{SystemStart: start, SystemEnd: end, Load: &bundle.LoadResult{Throughput: 10}}
	if w := workDone(ev, 0); !w.IOLowerBound || !strings.Contains(w.Summary(), "at least 1.0 reads and 10 writes per request") {
		t.Errorf("lower bound: %+v, %q", w, w.Summary())
	}

	// Descendants beyond the list at the end: a lower bound too.
	start, end = treeSnapshots(parent0, parent1, nil, []bundle.ProcessInfo{ioProc(12, 1003, 1, 1)})
	end.MoreChildren = 4
	if d, ok := TreeIO(start, end); !ok || d.Unread != 4 {
		t.Errorf("more children at the end: %+v, %v", d, ok)
	}

	// A worker gone in the window with its start counters unread: its
	// whole life is in the parent's gain, so no figures.
	start, end = treeSnapshots(parent0, ioProc(1, 900, 500, 500),
		[]bundle.ProcessInfo{unread(ioProc(11, 901, 0, 0))}, nil)
	if d, ok := TreeIO(start, end); ok {
		t.Errorf("gone unread worker: %+v, want no figures", d)
	}
	// Descendants beyond the list at the start: any of them gone would
	// count its whole life, so no figures.
	start, end = treeSnapshots(parent0, parent1, nil, nil)
	start.MoreChildren = 1
	if d, ok := TreeIO(start, end); ok {
		t.Errorf("more children at the start: %+v, want no figures", d)
	}
}

// A load that runs on after the collection window, slower while the stacks
// are read (a command load beside perf script): the unit's cost divides the
// window's CPU by the units done within the window, not by the whole load's
// rate. 100 units/s for the first 5 s, 50 after; the /proc window is 1.5 s
// to 4.5 s of the load, the process using 0.6 s of CPU in it: 2 ms a unit,
// where the whole load's 75/s would say 2.67 ms.
func TestWorkCountsTheUnitsInTheWindow(t *testing.T) {
	started := time.Date(2026, 11, 28, 2, 0, 0, 0, time.UTC)
	var tl []bundle.LoadSecond
	for i := range 10 {
		ok := int64(100)
		if i >= 5 {
			ok = 50
		}
		tl = append(tl, bundle.LoadSecond{T: i, OK: ok})
	}
	proc := func(cpu float64) *bundle.ProcessInfo {
		return &bundle.ProcessInfo{PID: 7, StartTime: 1, UserCPUSeconds: cpu}
	}
	ev := &evidence.Evidence{
		Load:        &bundle.LoadResult{Mode: "command", Unit: "lookup", Throughput: 75, Started: started, Timeline: tl},
		SystemStart: &bundle.SystemSnapshot{Time: started.Add(1500 * time.Millisecond), Process: proc(1)},
		SystemEnd:   &bundle.SystemSnapshot{Time: started.Add(4500 * time.Millisecond), Process: proc(1.6)},
	}
	w := workDone(ev, 0)
	if math.Abs(w.PerSecond-100) > 1e-9 || w.CPUPerUnit != 2*time.Millisecond || !strings.Contains(w.Source, "within the /proc window") {
		t.Errorf("per second %v, CPU per unit %v, source %q: want 100, 2ms, within the window", w.PerSecond, w.CPUPerUnit, w.Source)
	}

	// The collection and the load start together: a window that begins
	// 50 ms before the load's second 0 is read over the part it covers.
	ev.Load = &bundle.LoadResult{Mode: "command", Throughput: 75, Started: started.Add(1550 * time.Millisecond), Timeline: tl}
	if w := workDone(ev, 0); math.Abs(w.PerSecond-100) > 1e-9 {
		t.Errorf("window starting before the load: per second %v, want 100", w.PerSecond)
	}

	// Without the load's start (a bundle from before it was recorded), or
	// with a window the timeline does not cover, the whole load's rate.
	for name, l := range map[string]*bundle.LoadResult{
		"no start":       {Mode: "command", Throughput: 75, Timeline: tl},
		"window outside": {Mode: "command", Throughput: 75, Started: started.Add(-8 * time.Second), Timeline: tl},
	} {
		ev.Load = l
		if w := workDone(ev, 0); w.PerSecond != 75 || w.Source != "load results" {
			t.Errorf("%s: per second %v source %q, want the whole load's 75", name, w.PerSecond, w.Source)
		}
	}
}
