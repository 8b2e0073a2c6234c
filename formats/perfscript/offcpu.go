package perfscript

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/google/pprof/profile"
)

// OffCPUComment marks a profile of off-CPU time converted from perf's
// sched:sched_switch events.
const OffCPUComment = "perfdoctor off-CPU time from perf sched:sched_switch"

// States name a switched-out thread's state (sched_switch's prev_state):
// why it left the CPU.
var States = map[string]string{
	"S": "sleeping (waiting for an event: a lock, a socket, a timer)",
	"D": "uninterruptible (waiting for the disk or a kernel resource)",
	"R": "preempted (runnable, waiting for a CPU)",
}

// ParseOffCPU reads `perf script -F comm,pid,tid,time,event,trace,ip,sym,dso`
// output of sched:sched_switch events recorded with stacks (-g) and returns
// the off-CPU time of process pid by stack: each time one of its threads is
// switched out (the event's stack is where it blocked) until a CPU switches
// it back in. The profile's sample types are offcpu/nanoseconds and
// switches/count, with a "state" label (S, D or R: see States), the
// thread's name as a "comm" label and its ID as a "tid" number label (a
// server's threads do different work: redis's main thread serves requests,
// its bio threads sync the log). Threads
// still off the CPU when the recording ends are counted up to its last
// event; a thread's last switch-out, as it exits, opens no interval (a
// PostgreSQL backend ending with its client's connection otherwise counted
// as asleep to the end of the recording: 17.6 s each).
func ParseOffCPU(r io.Reader, pid int) (*profile.Profile, error) {
	return ParseOffCPUOf(r, func(p int) bool { return p == pid })
}

// ParseOffCPUOf is ParseOffCPU for the processes keep accepts (a process
// and its descendants), each sample with its process in a "pid" number
// label.
func ParseOffCPUOf(r io.Reader, keep func(pid int) bool) (*profile.Profile, error) {
	return parseOffCPU(r, keep, false)
}

// ParseOffCPUTree is ParseOffCPUOf for a process tree that grows while it is
// recorded: a process forked (sched:sched_process_fork, recorded beside the
// switches) by one it keeps is kept too. A server forking a process per
// connection (a PostgreSQL backend for each of pgbench's reconnecting
// clients) otherwise loses every process born after the recording began.
func ParseOffCPUTree(r io.Reader, keep func(pid int) bool) (*profile.Profile, error) {
	return parseOffCPU(r, keep, true)
}

func parseOffCPU(r io.Reader, keepFirst func(pid int) bool, followForks bool) (*profile.Profile, error) {
	born := map[int]bool{}
	keep := func(pid int) bool { return born[pid] || keepFirst(pid) }
	type out struct {
		at     float64
		stack  []string // "sym\x00dso", leaf first
		state  string
		thread string
		tid    int
		pid    int
	}
	b := newOffCPUBuilder()
	off := map[int]out{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	var cur *out
	var curTID int
	var first, last float64
	events, outs, lost := 0, 0, 0
	flush := func() {
		if cur != nil {
			if _, open := off[curTID]; open {
				// Switched out again with no switch-in in between: the
				// kernel did not report it, and the earlier interval's
				// end is unknown.
				lost++
			}
			off[curTID] = *cur
			outs++
		}
		cur = nil
	}
	for sc.Scan() {
		line := sc.Text()
		if strings.TrimSpace(line) == "" {
			flush()
			continue
		}
		if line[0] == ' ' || line[0] == '\t' {
			if cur != nil {
				if sym, dso, ok := stackLine(line); ok {
					cur.stack = append(cur.stack, sym+"\x00"+dso)
				}
			}
			continue
		}
		flush()
		if followForks {
			if parent, child, ok := parseFork(line); ok {
				if keep(parent) {
					born[child] = true
				}
				continue
			}
		}
		ev, ok := parseSwitch(line)
		if !ok {
			continue
		}
		events++
		if first == 0 {
			first = ev.time
		}
		last = max(last, ev.time)
		if o, ok := off[ev.nextPID]; ok {
			b.add(o.stack, o.state, o.thread, o.pid, o.tid, time.Duration((ev.time-o.at)*1e9))
			delete(off, ev.nextPID)
		}
		switch {
		case !keep(ev.pid) || ev.prevPID != ev.tid:
		case ev.exiting:
			// Its last switch-out opens nothing; one still open means
			// its switch-in went unreported, and the end of that wait
			// is unknown.
			if _, open := off[ev.tid]; open {
				lost++
				delete(off, ev.tid)
			}
		default:
			cur, curTID = &out{at: ev.time, state: ev.prevState, thread: ev.comm, tid: ev.tid, pid: ev.pid}, ev.tid
		}
	}
	flush()
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("perf script (sched_switch): %w", err)
	}
	if events == 0 {
		return nil, ErrNoSamples
	}
	for _, o := range off {
		b.add(o.stack, o.state, o.thread, o.pid, o.tid, time.Duration((last-o.at)*1e9))
	}
	p := b.p
	p.DurationNanos = int64((last - first) * 1e9)
	if lost > 0 {
		p.Comments = append(p.Comments, fmt.Sprintf("%s%d of %d switch-outs of the recorded threads had no switch-in reported by the kernel; their off-CPU time is not counted", incompletePrefix, lost, outs))
	}
	return p, nil
}

// incompletePrefix starts the comment of a profile whose recording missed
// switch-ins. Seen on a 6.18 kernel in a 2-core VM: a thread woken on an
// idle CPU was switched in with no sched_switch event (702 switch-outs, 12
// switch-ins on one CPU in a second), so its sleeps had no end.
const incompletePrefix = "incomplete: "

// OffCPUIncomplete says how an off-CPU profile undercounts, or "" when
// every switch-out of its threads had its switch-in.
func OffCPUIncomplete(p *profile.Profile) string { return commentAfter(p, incompletePrefix) }

type switchEvent struct {
	comm                       string // the thread switched out
	pid, tid, prevPID, nextPID int
	prevState                  string
	exiting                    bool // its last switch-out (prev_state X or Z)
	time                       float64
}

// parseFork reads a sched_process_fork header line:
// "comm PID/TID SECS.USECS: sched:sched_process_fork: comm=... pid=N child_comm=... child_pid=M".
// The parent is the forking task's process (the header's PID: the event's
// own pid is the forking thread's); the child, the new task (a thread of
// that process or a process of its own).
func parseFork(line string) (parent, child int, ok bool) {
	head, i := eventAt(line, "sched:sched_process_fork:")
	if i < 0 {
		return 0, 0, false
	}
	_, parent, _, _, ok = schedHeader(head)
	child = -1
	for _, f := range strings.Fields(line[i:]) {
		if v, found := strings.CutPrefix(f, "child_pid="); found {
			child, _ = strconv.Atoi(v)
		}
	}
	return parent, child, ok && child > 0
}

// eventAt finds event in a perf script line and returns the header before
// it (without the colon ending the time) and the event's index, -1 when the
// line is not that event. perf pads the event's name to a column when a
// recording holds several events ("1.5:       sched:sched_switch:").
func eventAt(line, event string) (string, int) {
	i := strings.Index(line, event)
	if i < 0 {
		return "", -1
	}
	head := strings.TrimRight(line[:i], " ")
	if !strings.HasSuffix(head, ":") {
		return "", -1
	}
	return strings.TrimSuffix(head, ":"), i
}

// schedHeader reads the "comm PID/TID SECS.USECS" that -F
// comm,pid,tid,time prints before a scheduler event's name.
func schedHeader(head string) (comm string, pid, tid int, at float64, ok bool) {
	f := strings.Fields(head)
	if len(f) < 3 {
		return "", 0, 0, 0, false
	}
	p, t, found := strings.Cut(f[len(f)-2], "/")
	var err1, err2, err3 error
	pid, err1 = strconv.Atoi(p)
	tid, err2 = strconv.Atoi(t)
	at, err3 = strconv.ParseFloat(f[len(f)-1], 64)
	if !found || err1 != nil || err2 != nil || err3 != nil {
		return "", 0, 0, 0, false
	}
	return strings.Join(f[:len(f)-2], " "), pid, tid, at, true
}

// parseSwitch reads a sched_switch header line:
// "comm PID/TID SECS.USECS: sched:sched_switch: prev_comm=... prev_pid=N ... prev_state=S ==> next_comm=... next_pid=M ...".
func parseSwitch(line string) (switchEvent, bool) {
	var ev switchEvent
	head, i := eventAt(line, "sched:sched_switch:")
	if i < 0 {
		return ev, false
	}
	var ok bool
	if ev.comm, ev.pid, ev.tid, ev.time, ok = schedHeader(head); !ok {
		return ev, false
	}
	prevPID, nextPID := -1, -1
	for _, f := range strings.Fields(line[i:]) {
		k, v, ok := strings.Cut(f, "=")
		if !ok {
			continue
		}
		switch k {
		case "prev_pid":
			prevPID, _ = strconv.Atoi(v)
		case "next_pid":
			nextPID, _ = strconv.Atoi(v)
		case "prev_state":
			ev.prevState = strings.TrimRight(v, "+")
		}
	}
	if prevPID < 0 || nextPID < 0 {
		return ev, false
	}
	ev.prevPID, ev.nextPID = prevPID, nextPID
	// A thread's last switch-out shows it dead or a zombie: it does not
	// wait for anything, it is gone.
	ev.exiting = strings.HasPrefix(ev.prevState, "X") || strings.HasPrefix(ev.prevState, "Z")
	if _, known := States[ev.prevState]; !known {
		ev.prevState = "S" // I (idle kernel threads), composite states: a sleep
	}
	return ev, true
}

// stackLine reads "\tffffffff82265488 __schedule ([kernel.kallsyms])".
func stackLine(line string) (sym, dso string, ok bool) {
	line = strings.TrimSpace(line)
	_, rest, ok := strings.Cut(line, " ")
	if !ok {
		return "", "", false
	}
	j := strings.LastIndex(rest, " (")
	if j < 0 || !strings.HasSuffix(rest, ")") {
		return rest, "", true
	}
	sym, dso = rest[:j], rest[j+2:len(rest)-1]
	if k := strings.LastIndex(sym, "+0x"); k > 0 {
		sym = sym[:k]
	}
	if k := strings.Index(sym, "@GLIBC_"); k > 0 {
		sym = sym[:k] // clock_nanosleep@GLIBC_2.2.5: the symbol's version
	}
	return sym, dso, true
}

// offCPUBuilder interns functions and locations per (symbol, object).
type offCPUBuilder struct {
	p       *profile.Profile
	locs    map[string]*profile.Location
	maps    map[string]*profile.Mapping
	samples map[string]*profile.Sample
}

func newOffCPUBuilder() *offCPUBuilder {
	return &offCPUBuilder{
		p: &profile.Profile{
			SampleType: []*profile.ValueType{{Type: "offcpu", Unit: "nanoseconds"}, {Type: "switches", Unit: "count"}},
			PeriodType: &profile.ValueType{Type: "offcpu", Unit: "nanoseconds"},
			Comments:   []string{OffCPUComment},
		},
		locs: map[string]*profile.Location{}, maps: map[string]*profile.Mapping{}, samples: map[string]*profile.Sample{},
	}
}

func (b *offCPUBuilder) add(stack []string, state, thread string, pid, tid int, d time.Duration) {
	if d < 0 {
		d = 0
	}
	key := fmt.Sprintf("%s\x01%d\x01%s", state, tid, strings.Join(stack, "\x01"))
	if s, ok := b.samples[key]; ok {
		s.Value[0] += d.Nanoseconds()
		s.Value[1]++
		return
	}
	s := &profile.Sample{Value: []int64{d.Nanoseconds(), 1}, Label: map[string][]string{"state": {state}, "comm": {thread}},
		NumLabel: map[string][]int64{"pid": {int64(pid)}, "tid": {int64(tid)}}}
	for _, fr := range stack {
		s.Location = append(s.Location, b.location(fr))
	}
	if len(stack) == 0 {
		s.Location = append(s.Location, b.location("[unknown]\x00"))
	}
	b.samples[key] = s
	b.p.Sample = append(b.p.Sample, s)
}

func (b *offCPUBuilder) location(fr string) *profile.Location {
	if l, ok := b.locs[fr]; ok {
		return l
	}
	sym, dso, _ := strings.Cut(fr, "\x00")
	m, ok := b.maps[dso]
	if !ok && dso != "" {
		m = &profile.Mapping{ID: uint64(len(b.p.Mapping) + 1), File: dso}
		b.maps[dso] = m
		b.p.Mapping = append(b.p.Mapping, m)
	}
	f := &profile.Function{ID: uint64(len(b.p.Function) + 1), Name: sym, SystemName: sym, Filename: dso}
	b.p.Function = append(b.p.Function, f)
	l := &profile.Location{ID: uint64(len(b.p.Location) + 1), Mapping: m, Line: []profile.Line{{Function: f}}}
	b.p.Location = append(b.p.Location, l)
	b.locs[fr] = l
	return l
}
