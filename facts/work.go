package facts

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/perfdoctor/perfdoctor/bundle"

	"github.com/perfdoctor/perfdoctor/evidence"
	"github.com/perfdoctor/perfdoctor/internal/human"
)

// Work is the unit of work and what one costs: what an engineer reads
// first on an unfamiliar server. Zero fields are unknown.
type Work struct {
	// Unit is what a unit of work is ("request", "SET", "transaction"),
	// Units how many the window served and PerSecond their rate; Source
	// says where the count came from. Units is 0 when nothing counted them.
	Unit      string  `json:"unit,omitempty"`
	Units     float64 `json:"units,omitempty"`
	PerSecond float64 `json:"per_second,omitempty"`
	Source    string  `json:"source,omitempty"`
	// Cores is the CPU the process used over the window and Available what
	// it may use (CPUs it may run on, its quota, GOMAXPROCS for Go);
	// CoresSource says how Cores was read.
	Cores       float64 `json:"cores,omitempty"`
	Available   float64 `json:"cores_available,omitempty"`
	CoresSource string  `json:"cores_source,omitempty"`
	// CPUPerUnit is the process's CPU time per unit.
	CPUPerUnit time.Duration `json:"cpu_per_unit_ns,omitempty"`
	// ReadsPerUnit and WritesPerUnit are the process's read and write
	// system calls per unit, its descendants' included (/proc/PID/io:
	// read, readv, pread, write, writev and pwrite on sockets, files and
	// pipes, sendfile as one of each; send, recv and their msg forms are
	// not counted), and BytesInPerUnit, BytesOutPerUnit the bytes they
	// moved. IOSource says how they were read; IOLowerBound that some
	// descendants' counters could not be read, so the figures are at least
	// what the tree did (TreeIO).
	ReadsPerUnit    float64 `json:"read_syscalls_per_unit,omitempty"`
	WritesPerUnit   float64 `json:"write_syscalls_per_unit,omitempty"`
	BytesInPerUnit  float64 `json:"bytes_read_per_unit,omitempty"`
	BytesOutPerUnit float64 `json:"bytes_written_per_unit,omitempty"`
	IOSource        string  `json:"io_source,omitempty"`
	IOLowerBound    bool    `json:"io_lower_bound,omitempty"`
	// NewConnsPerUnit is the TCP connections opened per unit, accepted and
	// dialled, in the host's network namespace (/proc/net/snmp: the load
	// generator's count too when it runs on the host); HasConns says it
	// was measured (0 is a reading: connections are kept).
	NewConnsPerUnit float64 `json:"new_connections_per_unit,omitempty"`
	HasConns        bool    `json:"-"`
	// WarmupPerSecond is the rate of the same load in its warm-up, run
	// just before the recording with nothing recorded (perfdoctor run):
	// against PerSecond, what the recording cost the service.
	WarmupPerSecond float64 `json:"warmup_per_second,omitempty"`
}

// RecordingSlowdown is how many times faster the service ran in the
// warm-up just before the recording than in the window: above 1 the
// recording slowed it (perf's scheduler events on every context switch, a
// JVM running deoptimized code after JFR's start), 0 when unknown.
func (w Work) RecordingSlowdown() float64 {
	if w.WarmupPerSecond <= 0 || w.PerSecond <= 0 {
		return 0
	}
	return w.WarmupPerSecond / w.PerSecond
}

// Busy is the share of the available CPU the process used, 0 when unknown.
func (w Work) Busy() float64 {
	if w.Available <= 0 {
		return 0
	}
	return w.Cores / w.Available
}

// notCPUBound is the share of the CPU it may use under which a process's
// throughput is not its CPUs': the line the rules engine's significance
// test, its ranking and DISK001's queue's law all draw.
const notCPUBound = 0.5

// WaitBound reports whether the process, its cores and the cores it may
// use both known, used under half of them: its waits, not its CPUs, set
// its throughput.
func (w Work) WaitBound() bool {
	return w.Cores > 0 && w.Available > 0 && w.Busy() < notCPUBound
}

// Summary is the work in one line: "1.9 ms CPU, 2.0 reads and 2.0 writes,
// 0.98 new connections per request (12,345 requests/s; 0.92 of 2 cores)",
// or "" when no unit was counted and no CPU measured.
func (w Work) Summary() string {
	var per []string
	if w.CPUPerUnit > 0 {
		per = append(per, human.RoundDuration(w.CPUPerUnit).String()+" CPU")
	}
	if w.ReadsPerUnit > 0 || w.WritesPerUnit > 0 {
		at := ""
		if w.IOLowerBound {
			at = "at least "
		}
		per = append(per, fmt.Sprintf("%s%s reads and %s writes", at, count(w.ReadsPerUnit), count(w.WritesPerUnit)))
	}
	if w.HasConns {
		per = append(per, count(w.NewConnsPerUnit)+" new connections")
	}
	var s string
	if len(per) > 0 {
		s = strings.Join(per, ", ") + " per " + w.Unit
	}
	var ctx []string
	if w.PerSecond > 0 {
		ctx = append(ctx, fmt.Sprintf("%s %ss/s", human.Number(w.PerSecond), w.Unit))
	}
	if w.Cores > 0 {
		c := fmt.Sprintf("%.2f cores", w.Cores)
		if w.Available > 0 {
			c = fmt.Sprintf("%.2f of %s cores", w.Cores, human.Number(w.Available))
		}
		ctx = append(ctx, c)
	}
	switch {
	case s == "" && len(ctx) == 0:
		return ""
	case s == "":
		return strings.Join(ctx, "; ")
	case len(ctx) == 0:
		return s
	}
	return s + " (" + strings.Join(ctx, "; ") + ")"
}

// count is a per-unit count for reading: 2.0, 0.98, 0.013.
func count(v float64) string {
	switch {
	case v == 0:
		return "0"
	case v >= 10:
		return fmt.Sprintf("%.0f", v)
	case v >= 1:
		return fmt.Sprintf("%.1f", v)
	}
	return fmt.Sprintf("%.2g", v)
}

// WorkDone is the work accounting of the window: the units served (from the
// load that ran), the process's CPU and what one unit costs.
var WorkDone = &Fact[Work]{
	Name:     "work",
	Doc:      "The unit of work and its cost: units served in the window (the load's results), the process's CPU over the window (/proc with its descendants', else the CPU profile) against the cores it may use, and per unit its CPU time, read and write system calls and their bytes (/proc/PID/io of the process and its descendants, those that exited in the window through their parents' counters; marked a lower bound when some could not be read), and new TCP connections.",
	Requires: []Key{CoresUsed},
	Compute:  func(p *Pass) Work { return workDone(p.Evidence, Get(p, CoresUsed)) },
}

func workDone(ev *evidence.Evidence, profileCores float64) Work {
	var w Work
	window := ev.Window().Seconds()
	if l := ev.Load; l != nil && l.Throughput > 0 {
		w.Unit, w.PerSecond, w.Source = l.Unit, l.Throughput, "load results"
		if l.Warmup != nil {
			w.WarmupPerSecond = l.Warmup.Throughput
		}
		if w.Unit == "" {
			w.Unit = "request"
		}
		if window > 0 {
			w.Units = l.Throughput * window
		}
	}
	d, haveDelta := ev.SystemDelta()
	sameProcess := haveDelta && d.Seconds > 0 && d.Start.Process != nil && d.End.Process != nil && d.Start.Process.PID == d.End.Process.PID
	if l := ev.Load; l != nil && haveDelta && w.PerSecond > 0 {
		// The CPU is read over the /proc snapshots' interval, so the units
		// are too, where the load's timeline covers it: a load that runs on
		// after the window (perfdoctor run's load, while the stacks are
		// read) runs slower or faster than within it.
		if r, ok := windowRate(l, d.Start.Time, d.End.Time); ok {
			w.PerSecond, w.Source = r, "load results within the /proc window"
			if window > 0 {
				w.Units = r * window
			}
		}
	}
	var used float64 // the process's CPU seconds over the window
	tree := 0.0      // its descendants' CPU seconds, when they were snapshotted
	if sameProcess {
		p, q := d.Start.Process, d.End.Process
		used = q.UserCPUSeconds + q.SystemCPUSeconds - p.UserCPUSeconds - p.SystemCPUSeconds
		tree = descendantsCPU(d.Start, d.End)
	}
	switch {
	case used+tree > 0 && tree > 0:
		// A server whose work runs in its children (a database's backends,
		// a web server's workers): the unit's cost is the tree's.
		w.Cores, w.CoresSource = (used+tree)/d.Seconds, "/proc process times, with its descendants"
	case used > 0:
		w.Cores, w.CoresSource = used/d.Seconds, "/proc process times"
	case profileCores > 0 && ev.JVM != nil:
		w.Cores, w.CoresSource = profileCores, "the JVM's CPU load (JFR)"
	case profileCores > 0:
		w.Cores, w.CoresSource = profileCores, "CPU profile samples"
	}
	s := ev.Settings()
	for _, limit := range []float64{float64(s.NumCPU), s.CPUQuota, float64(s.GOMAXPROCS)} {
		if limit > 0 && (w.Available == 0 || limit < w.Available) {
			w.Available = limit
		}
	}
	if w.PerSecond <= 0 {
		return w
	}
	if w.Cores > 0 {
		w.CPUPerUnit = time.Duration(w.Cores / w.PerSecond * float64(time.Second))
	}
	if haveDelta && d.Seconds > 0 {
		rate := func(v uint64) float64 { return float64(v) / d.Seconds / w.PerSecond }
		if sameProcess {
			if io, ok := TreeIO(d.Start, d.End); ok {
				w.ReadsPerUnit = rate(io.ReadSyscalls)
				w.WritesPerUnit = rate(io.WriteSyscalls)
				w.BytesInPerUnit = rate(io.ReadChars)
				w.BytesOutPerUnit = rate(io.WriteChars)
				w.IOSource, w.IOLowerBound = io.Source(), io.Unread > 0
			}
		}
		active, ok1 := d.Counter("Tcp.ActiveOpens")
		passive, ok2 := d.Counter("Tcp.PassiveOpens")
		if ok1 && ok2 {
			// A connection on loopback counts twice, dialled and accepted:
			// the larger of the two is the connections made.
			opened := float64(active)
			if passive > active {
				opened = float64(passive)
			}
			w.NewConnsPerUnit, w.HasConns = opened/d.Seconds/w.PerSecond, true
		}
	}
	if math.IsNaN(w.NewConnsPerUnit) || math.IsInf(w.NewConnsPerUnit, 0) {
		w.NewConnsPerUnit, w.HasConns = 0, false
	}
	return w
}

// windowRate is the rate of successful units the load's timeline shows
// between from and to, each second counted by the part of it inside; false
// without the load's start, when the timeline covers less than minCovered
// of the interval, or when it holds none of the units. The load and the
// collection start together, so the window may begin a few milliseconds
// before the load's second 0 (the warm-up's load ran then): the rate is
// read over the part the timeline covers.
func windowRate(l *bundle.LoadResult, from, to time.Time) (float64, bool) {
	if l.Started.IsZero() || !to.After(from) {
		return 0, false
	}
	const minCovered = 0.9
	a, b := from.Sub(l.Started).Seconds(), to.Sub(l.Started).Seconds()
	window := b - a
	a, b = max(a, 0), min(b, float64(len(l.Timeline)))
	if b-a < minCovered*window {
		return 0, false
	}
	var units float64
	for i, s := range l.Timeline {
		if in := min(b, float64(i+1)) - max(a, float64(i)); in > 0 {
			units += float64(s.OK) * in
		}
	}
	if units <= 0 {
		return 0, false
	}
	return units / (b - a), true
}

// IODelta is the I/O a process tree did between two snapshots of it:
// system calls and the bytes they moved (ProcessIO's counters), and how
// many of its processes were counted and could not be.
type IODelta struct {
	ReadSyscalls, WriteSyscalls, ReadChars, WriteChars uint64
	// Descendants counts the descendants whose counters are in the figures
	// (seen at the end; those that exited are in their parent's), Unread
	// those seen whose counters could not be read, or not listed at the
	// end (SystemSnapshot.MoreChildren): the figures are a lower bound.
	Descendants, Unread int
}

// Source says where the figures came from, for the report.
func (d IODelta) Source() string {
	s := "/proc/PID/io"
	if d.Descendants > 0 {
		s += fmt.Sprintf(", with %d descendants", d.Descendants)
	}
	if d.Unread > 0 {
		s += fmt.Sprintf(", a lower bound: %d descendants unread", d.Unread)
	}
	return s
}

// TreeIO is the I/O a process and its descendants did between two
// snapshots of its tree: the process's own difference, each descendant's
// seen at both ends (the same PID and start time: a reused PID is a new
// process, never a difference against another's counters), all of each
// born in the window, and those that exited: the kernel adds a child's
// counters to its parent's when the parent reaps it, as it does its CPU
// time, so the parents' gain holds them, less what the gone ones had done
// by the start (their start counters, subtracted).
//
// ok is false when the figures would be unknown or could be too high:
// the process's own counters unread at either end, a descendant gone in
// the window whose start counters were unread, or descendants at the
// start beyond those listed (MoreChildren: any that exited in the window
// would count their whole life). Descendants seen whose counters could
// not be read are left out and counted in Unread (a lower bound), as are
// those beyond the list at the end, and a descendant first seen at the
// end that started before the start snapshot (its earlier work is not
// the window's). Children reaped without a wait (SIGCHLD ignored) take
// their counters with them, as their CPU time.
func TreeIO(start, end *bundle.SystemSnapshot) (d IODelta, ok bool) {
	if start == nil || end == nil || start.Process == nil || end.Process == nil ||
		start.Process.IO == nil || end.Process.IO == nil || start.MoreChildren > 0 {
		return d, false
	}
	var reads, writes, in, out int64
	add := func(sign int64, io *bundle.ProcessIO) {
		reads += sign * int64(io.ReadSyscalls)
		writes += sign * int64(io.WriteSyscalls)
		in += sign * int64(io.ReadChars)
		out += sign * int64(io.WriteChars)
	}
	add(1, end.Process.IO)
	add(-1, start.Process.IO)
	// A process first seen at the end that had started a while before the
	// start snapshot was not born in the window. Start times come from the
	// boot time, which /proc gives in whole seconds.
	bornBefore := func(c bundle.ProcessInfo) bool {
		return !start.Time.IsZero() && c.StartTime > 0 && c.StartTime < float64(start.Time.UnixNano())/1e9-2
	}
	gone := map[int]bundle.ProcessInfo{}
	for _, c := range start.Children {
		gone[c.PID] = c
	}
	bundle.ChildrenAcross(start, end, func(c bundle.ProcessInfo, b *bundle.ProcessInfo) {
		if b != nil {
			delete(gone, b.PID)
		}
		switch {
		case b != nil && b.IO == nil, c.IO == nil:
			d.Unread++
		case b != nil:
			add(1, c.IO)
			add(-1, b.IO)
			d.Descendants++
		case bornBefore(c):
			d.Unread++
		default:
			add(1, c.IO)
			d.Descendants++
		}
	})
	for _, b := range gone {
		if b.IO == nil {
			// Gone with what it had done by the start unknown: its
			// parent's gain holds all of it.
			return IODelta{}, false
		}
		add(-1, b.IO) // gone: its parent's counters hold all it did
	}
	d.Unread += end.MoreChildren
	d.ReadSyscalls, d.WriteSyscalls = uint64(max(reads, 0)), uint64(max(writes, 0))
	d.ReadChars, d.WriteChars = uint64(max(in, 0)), uint64(max(out, 0))
	return d, true
}

// descendantsCPU is the CPU seconds a process's descendants used between
// two snapshots (DescendantTimes' user and system together).
func descendantsCPU(start, end *bundle.SystemSnapshot) float64 {
	user, system := DescendantTimes(start, end)
	return user + system
}

// DescendantTimes is the user and system CPU seconds a process's
// descendants used between two snapshots of its tree: each seen at both
// ends by its difference, each born in the window by all of it, and those
// that exited as bundle.ChildrenAcross counts them. The kernel keeps reaped
// time as one figure per parent, so it is split as the descendants' own
// time is.
func DescendantTimes(start, end *bundle.SystemSnapshot) (user, system float64) {
	if start == nil || end == nil || end.Process == nil || start.Process == nil || len(end.Children)+len(start.Children) == 0 {
		return 0, 0
	}
	_, exited := bundle.ChildrenAcross(start, end, func(p bundle.ProcessInfo, b *bundle.ProcessInfo) {
		if b == nil {
			user += p.UserCPUSeconds
			system += p.SystemCPUSeconds
			return
		}
		user += max(p.UserCPUSeconds-b.UserCPUSeconds, 0)
		system += max(p.SystemCPUSeconds-b.SystemCPUSeconds, 0)
	})
	if exited > 0 {
		userShare := 0.5
		if user+system > 0 {
			userShare = user / (user + system)
		}
		user += exited * userShare
		system += exited * (1 - userShare)
	}
	return user, system
}
