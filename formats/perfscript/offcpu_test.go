package perfscript

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/pprof/profile"
)

// testdata/sched_switch.txt is `perf record -e sched:sched_switch -g -a`
// (filtered on the process's comm) of a C program that sleeps 5 ms and
// fdatasyncs a file in a loop (pid 18439), on a loaded 2-CPU machine.
func TestOffCPUByStackAndState(t *testing.T) {
	f, err := os.Open("testdata/sched_switch.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p, err := ParseOffCPU(f, 18439)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.CheckValid(); err != nil {
		t.Fatal(err)
	}
	by := map[string]time.Duration{}
	for _, s := range p.Sample {
		var funcs []string
		for _, l := range s.Location {
			funcs = append(funcs, l.Line[0].Function.Name)
		}
		stack := strings.Join(funcs, ";")
		switch {
		case strings.Contains(stack, "fdatasync"):
			by["sync "+s.Label["state"][0]] += time.Duration(s.Value[0])
			if s.Label["comm"][0] != "sleeper" || s.NumLabel["tid"][0] != 18439 {
				t.Errorf("a sync by thread %v %v, want sleeper 18439", s.Label["comm"], s.NumLabel["tid"])
			}
		case strings.Contains(stack, "nanosleep"):
			by["sleep "+s.Label["state"][0]] += time.Duration(s.Value[0])
		}
	}
	// The program sleeps 5 ms a loop: its sleeps are most of its off-CPU
	// time, the syncs wait uninterruptibly for the disk.
	if by["sleep S"] < 50*time.Millisecond || by["sync D"] <= 0 {
		t.Errorf("off-CPU time by place and state: %v", by)
	}
}

// A thread switched out twice with no switch-in between (the kernel did not
// report it) has an interval with no end: the profile says how many, and
// the golden recording, complete, says nothing.
func TestOffCPUMissingSwitchIns(t *testing.T) {
	out := func(at string) string {
		return "napper 7/7 " + at + ": sched:sched_switch: prev_comm=napper prev_pid=7 prev_prio=120 prev_state=S ==> next_comm=swapper/1 next_pid=0 next_prio=120\n" +
			"\t    ffff clock_nanosleep (/usr/lib/libc.so.6)\n\n"
	}
	in := func(at string) string {
		return "swapper 0/0 " + at + ": sched:sched_switch: prev_comm=swapper/1 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=napper next_pid=7 next_prio=120\n\n"
	}
	p, err := ParseOffCPU(strings.NewReader(out("1.000")+in("1.005")+out("1.006")+out("1.012")+out("1.018")+in("1.023")), 7)
	if err != nil {
		t.Fatal(err)
	}
	if got := OffCPUIncomplete(p); !strings.HasPrefix(got, "2 of 4 switch-outs") {
		t.Errorf("incomplete: %q", got)
	}
	f, err := os.Open("testdata/sched_switch.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if p, err := ParseOffCPU(f, 18439); err != nil || OffCPUIncomplete(p) != "" {
		t.Errorf("the golden recording: %v, incomplete %q", err, OffCPUIncomplete(p))
	}
}

// A thread's last switch-out as it exits (prev_state Z or X) is not a
// wait: a backend that sleeps 5 ms, runs and exits counts its 5 ms, not
// the rest of the recording.
func TestOffCPUExitedThreadStopsCounting(t *testing.T) {
	switchOut := func(at, state string) string {
		return "postgres 7/7 " + at + ": sched:sched_switch: prev_comm=postgres prev_pid=7 prev_prio=120 prev_state=" + state +
			" ==> next_comm=swapper/1 next_pid=0 next_prio=120\n\t    ffff epoll_wait (/usr/lib/libc.so.6)\n\n"
	}
	in := func(at string) string {
		return "swapper 0/0 " + at + ": sched:sched_switch: prev_comm=swapper/1 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=postgres next_pid=7 next_prio=120\n\n"
	}
	other := "other 9/9 20.000: sched:sched_switch: prev_comm=other prev_pid=9 prev_prio=120 prev_state=S ==> next_comm=swapper/0 next_pid=0 next_prio=120\n\n"
	for _, state := range []string{"Z", "X"} {
		p, err := ParseOffCPU(strings.NewReader(switchOut("1.000", "S")+in("1.005")+switchOut("1.006", state)+other), 7)
		if err != nil {
			t.Fatal(err)
		}
		var off time.Duration
		for _, s := range p.Sample {
			off += time.Duration(s.Value[0])
		}
		if off < 5*time.Millisecond-time.Microsecond || off > 5*time.Millisecond+time.Microsecond {
			t.Errorf("exit as %s: %v off the CPU, want 5ms", state, off)
		}
		// Preempted, switched back in unreported (a 6.18 kernel's
		// idle-CPU wake-ups), then exiting: the open wait's end is
		// unknown, so it is not counted to the end of the recording.
		p, err = ParseOffCPU(strings.NewReader(switchOut("1.000", "S")+in("1.005")+switchOut("1.006", "R+")+switchOut("1.008", state)+other), 7)
		if err != nil {
			t.Fatal(err)
		}
		off = 0
		for _, s := range p.Sample {
			off += time.Duration(s.Value[0])
		}
		if off < 5*time.Millisecond-time.Microsecond || off > 5*time.Millisecond+time.Microsecond || !strings.HasPrefix(OffCPUIncomplete(p), "1 of 2") {
			t.Errorf("unreported switch-in, then exit as %s: %v off the CPU (want 5ms), %q", state, off, OffCPUIncomplete(p))
		}
	}
}

// A backend forked during the recording (pgbench reconnecting) is kept
// with the tree that forked it; one forked by another process is not, and
// ParseOffCPUOf, which follows no forks, keeps only what it was given.
func TestOffCPUTreeFollowsForks(t *testing.T) {
	fork := func(at string, parent, child int) string {
		return fmt.Sprintf("postgres %d/%d %s: sched:sched_process_fork: comm=postgres pid=%d child_comm=postgres child_pid=%d\n\t    ffff _Fork (/usr/lib/libc.so.6)\n\n",
			parent, parent, at, parent, child)
	}
	sleep := func(pid int, out, in string) string {
		return fmt.Sprintf("postgres %d/%d %s: sched:sched_switch: prev_comm=postgres prev_pid=%d prev_prio=120 prev_state=D ==> next_comm=swapper/1 next_pid=0 next_prio=120\n\t    ffff fdatasync (/usr/lib/libc.so.6)\n\n", pid, pid, out, pid) +
			fmt.Sprintf("swapper 0/0 %s: sched:sched_switch: prev_comm=swapper/1 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=postgres next_pid=%d next_prio=120\n\n", in, pid)
	}
	// 10 is the postmaster, 11 a backend from the start; 12 is forked by
	// 10 during the recording, 21 by an unrelated 20.
	in := fork("1.000", 10, 12) + fork("1.000", 20, 21) + sleep(11, "1.001", "1.003") + sleep(12, "1.002", "1.006") + sleep(21, "1.002", "1.010")
	pids := func(p *profile.Profile) map[int64]time.Duration {
		by := map[int64]time.Duration{}
		for _, s := range p.Sample {
			by[s.NumLabel["pid"][0]] += time.Duration(s.Value[0])
		}
		return by
	}
	keep := func(pid int) bool { return pid == 10 || pid == 11 }
	p, err := ParseOffCPUTree(strings.NewReader(in), keep)
	if err != nil {
		t.Fatal(err)
	}
	if by := pids(p); len(by) != 2 || by[11] < 1900*time.Microsecond || by[12] < 3900*time.Microsecond {
		t.Errorf("tree: off-CPU by process %v, want 11 and the forked 12", by)
	}
	if p, err := ParseOffCPUOf(strings.NewReader(in), keep); err != nil || len(pids(p)) != 1 {
		t.Errorf("no forks followed: %v, %v", err, pids(p))
	}
}

// A recording of two events (the switches and the forks) pads the event's
// name to a column: "26145.564108:       sched:sched_switch:".
func TestOffCPUPaddedEventNames(t *testing.T) {
	in := "sh 7/7 26145.560000:       sched:sched_switch: prev_comm=sh prev_pid=7 prev_prio=120 prev_state=S ==> next_comm=swapper/1 next_pid=0 next_prio=120\n\tffff wait4 (/usr/lib/libc.so.6)\n\n" +
		"sh 7/7 26145.561000: sched:sched_process_fork: comm=sh pid=7 child_comm=sh child_pid=9\n\n" +
		"swapper 0/0 26145.564000:       sched:sched_switch: prev_comm=swapper/1 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=sh next_pid=7 next_prio=120\n\n"
	p, err := ParseOffCPUTree(strings.NewReader(in), func(pid int) bool { return pid == 7 })
	if err != nil || len(p.Sample) != 1 || time.Duration(p.Sample[0].Value[0]).Round(time.Microsecond) != 4*time.Millisecond {
		t.Fatalf("padded: %v, %+v", err, p)
	}
	if parent, child, ok := parseFork("sh 7/7 26145.561000:  sched:sched_process_fork: comm=sh pid=7 child_comm=sh child_pid=9"); !ok || parent != 7 || child != 9 {
		t.Errorf("fork: %d %d %v", parent, child, ok)
	}
}

// Lines of other programs, or no sched_switch at all, give no samples.
func TestOffCPUOfOtherContent(t *testing.T) {
	if _, err := ParseOffCPU(strings.NewReader("perf 1/1 1.0: cpu-clock:\n\tffff f (k)\n\n"), 1); err != ErrNoSamples {
		t.Errorf("err = %v", err)
	}
}

func FuzzParseOffCPU(f *testing.F) {
	if b, err := os.ReadFile("testdata/sched_switch.txt"); err == nil {
		f.Add(string(b[:min(len(b), 4000)]))
	}
	f.Add("a 1/1 1.5: sched:sched_switch: prev_comm=a prev_pid=1 prev_state=D ==> next_comm=b next_pid=2\n\t1 f (x)\n\nb 2/2 1.6: sched:sched_switch: prev_comm=b prev_pid=2 prev_state=R+ ==> next_comm=a next_pid=1\n")
	f.Add("a 1/1 1.4: sched:sched_process_fork: comm=a pid=1 child_comm=a child_pid=3\n\na 3/3 1.5: sched:sched_switch: prev_comm=a prev_pid=3 prev_state=S ==> next_comm=b next_pid=2\n\nb 2/2 1.6: sched:sched_switch: prev_comm=b prev_pid=2 prev_state=R ==> next_comm=a next_pid=3\n")
	f.Fuzz(func(t *testing.T, s string) {
		for _, parse := range []func() (*profile.Profile, error){
			func() (*profile.Profile, error) { return ParseOffCPU(strings.NewReader(s), 1) },
			func() (*profile.Profile, error) {
				return ParseOffCPUTree(strings.NewReader(s), func(pid int) bool { return pid == 1 })
			},
		} {
			if p, err := parse(); err == nil {
				if err := p.CheckValid(); err != nil {
					t.Fatal(err)
				}
			}
		}
	})
}
