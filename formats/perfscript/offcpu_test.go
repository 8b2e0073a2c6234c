package perfscript

import (
	"os"
	"strings"
	"testing"
	"time"
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
	f.Fuzz(func(t *testing.T, s string) {
		p, err := ParseOffCPU(strings.NewReader(s), 1)
		if err == nil {
			if err := p.CheckValid(); err != nil {
				t.Fatal(err)
			}
		}
	})
}
