package net003

import (
	"strings"
	"testing"

	"github.com/perfdoctor/perfdoctor/facts"
	"github.com/perfdoctor/perfdoctor/rules/ruletest"

	"github.com/google/pprof/profile"

	"github.com/perfdoctor/perfdoctor/bundle"
	"github.com/perfdoctor/perfdoctor/evidence"
	"github.com/perfdoctor/perfdoctor/internal/testprof"
	"github.com/perfdoctor/perfdoctor/internal/testsys"
	"github.com/perfdoctor/perfdoctor/rules"
)

func run(t *testing.T, edit func(start, end *bundle.SystemSnapshot)) rules.Result {
	t.Helper()
	return rules.Run(facts.New(testsys.Evidence(t, "e2-fixed", edit)), []*rules.Rule{Rule})
}

// shares rewrites the end snapshot so that each CPU spent the window (its
// recorded length) in the given shares of user, system and softirq time,
// the rest idle, and the process all of the user and system time.
func shares(us, sy, si func(cpu int) float64) func(start, end *bundle.SystemSnapshot) {
	return func(start, end *bundle.SystemSnapshot) {
		p := *start.Process
		end.Process = &p
		for i := range end.CPUs {
			s, e := start.CPUs[i], &end.CPUs[i]
			total := e.Sub(s).Total()
			*e = s
			e.User += us(i) * total
			e.System += sy(i) * total
			e.SoftIRQ += si(i) * total
			e.Idle += (1 - us(i) - sy(i) - si(i)) * total
			p.UserCPUSeconds += us(i) * total
			p.SystemCPUSeconds += sy(i) * total
		}
	}
}

func all(v float64) func(int) float64 { return func(int) float64 { return v } }

func TestSilentOnRecordedLoopbackService(t *testing.T) {
	// Recorded: us 73%, sy 21%, si 5% under E2's fixed variant.
	if res := run(t, nil); len(res.Findings) != 0 {
		t.Fatalf("a normal loopback service reported: %+v", res.Findings[0])
	}
}

func TestFiresWhenKernelTimeDominates(t *testing.T) {
	res := run(t, shares(all(0.05), all(0.55), all(0.30)))
	if len(res.Findings) != 1 {
		t.Fatalf("sy 55%% + si 30%% of a busy machine: %+v", res)
	}
	f := res.Findings[0]
	if f.Severity != rules.High || !strings.HasPrefix(f.Summary, "94% of busy CPU is kernel work (sy 61%, si 33%, us 5.6%)") {
		t.Errorf("finding %s %q", f.Severity, f.Summary)
	}
	// The kernel share above 30%, as the engine estimates a fix that
	// states no range of its own.
	if f.Impact < rules.Estimated(0.6) || f.Impact > rules.Estimated(0.66) {
		t.Errorf("impact %.2f, want the kernel share above 30%%, estimated", f.Impact)
	}
	// The recorded perf profile names kernel functions.
	found := false
	for _, e := range f.Evidence {
		found = found || e.Name == "kernel functions in perf" && e.Value != ""
	}
	if !found {
		t.Errorf("no kernel functions from perf in %+v", f.Evidence)
	}
}

func TestSilentWhenIdle(t *testing.T) {
	// The same proportions on a machine 80% idle are not a bottleneck.
	if res := run(t, shares(all(0.03), all(0.09), all(0.06))); len(res.Findings) != 0 {
		t.Fatalf("idle machine reported: %+v", res.Findings[0])
	}
}

func TestFiresOnSoftirqSkew(t *testing.T) {
	skew := func(start, end *bundle.SystemSnapshot) {
		shares(all(0.5), all(0.2), func(cpu int) float64 { return []float64{0.3, 0.02}[cpu] })(start, end)
		end.NetRxSoftirqs[0] = start.NetRxSoftirqs[0] + 900000
		end.NetRxSoftirqs[1] = start.NetRxSoftirqs[1] + 30000
	}
	res := run(t, skew)
	if len(res.Findings) != 1 || res.Findings[0].Severity != rules.Medium || !strings.Contains(res.Findings[0].Summary, "CPU 0 takes 30.0x the NET_RX softirqs") ||
		!strings.Contains(res.Findings[0].Fix, "RPS/RFS") {
		t.Fatalf("one CPU with 30x the NET_RX and 30%% softirq: %+v", res.Findings)
	}
	// The same counts spread evenly: no skew.
	even := func(start, end *bundle.SystemSnapshot) {
		skew(start, end)
		end.NetRxSoftirqs[1] = start.NetRxSoftirqs[1] + 900000
	}
	if res := run(t, even); len(res.Findings) != 0 {
		t.Fatalf("even softirqs reported: %+v", res.Findings[0])
	}
}

// The host's system time is another process's: the target itself spends
// 90% of its CPU in user code, so it is not this service's finding.
// Without perf (or with too few samples), /proc's process times are read.
func TestReadsTheProcesssOwnTimes(t *testing.T) {
	runProc := func(edit func(start, end *bundle.SystemSnapshot)) rules.Result {
		ev := testsys.Evidence(t, "e2-fixed", edit)
		delete(ev.Profiles, evidence.Perf)
		return rules.Run(facts.New(ev), []*rules.Rule{Rule})
	}
	heavy := shares(all(0.05), all(0.8), all(0.05))
	if res := runProc(heavy); len(res.Findings) != 1 || !strings.Contains(res.Findings[0].Summary, "sy 89%") {
		t.Fatalf("sy 80%% in the process itself: %+v", res)
	}
	res := runProc(func(start, end *bundle.SystemSnapshot) {
		heavy(start, end)
		p := *start.Process
		p.UserCPUSeconds += 0.9
		p.SystemCPUSeconds += 0.1
		end.Process = &p
	})
	if len(res.Findings) != 0 {
		t.Errorf("host-wide system time charged to a process that is 90%% user: %q", res.Findings[0].Summary)
	}
}

// perfProfile is a perf-like profile of kernel stacks (leaf first).
func perfProfile(stacks map[int64][]string) *profile.Profile {
	kernel := &profile.Mapping{ID: 1, File: "[kernel.kallsyms]", HasFunctions: true}
	p := &profile.Profile{SampleType: []*profile.ValueType{{Type: "samples", Unit: "count"}}, Mapping: []*profile.Mapping{kernel}}
	fns := map[string]*profile.Location{}
	for n, stack := range stacks {
		s := &profile.Sample{Value: []int64{n}}
		for _, fn := range stack {
			l := fns[fn]
			if l == nil {
				f := &profile.Function{ID: uint64(len(p.Function) + 1), Name: fn}
				l = &profile.Location{ID: uint64(len(p.Location) + 1), Mapping: kernel, Line: []profile.Line{{Function: f}}}
				p.Function = append(p.Function, f)
				p.Location = append(p.Location, l)
				fns[fn] = l
			}
			s.Location = append(s.Location, l)
		}
		p.Sample = append(p.Sample, s)
	}
	return p
}

// A redis with appendfsync always: the kernel time is the block device and
// the journal under fdatasync (virtio's iowrite16 under ext4_writepages),
// which is disk, not network.
func TestBlockDevicePathsAreNotNetwork(t *testing.T) {
	ev := testsys.Evidence(t, "e2-fixed", shares(all(0.05), all(0.55), all(0.30)))
	ev.Profiles[evidence.Perf] = perfProfile(map[int64][]string{
		900: {"iowrite16", "vp_notify", "virtqueue_notify", "virtio_queue_rq", "blk_mq_dispatch_rq_list", "ext4_writepages", "do_writepages", "file_write_and_wait_range", "ext4_sync_file", "__x64_sys_fdatasync", "do_syscall_64"},
		100: {"tcp_sendmsg_locked", "tcp_sendmsg", "sock_write_iter", "vfs_write", "do_syscall_64"},
	})
	res := rules.Run(facts.New(ev), []*rules.Rule{Rule})
	if len(res.Findings) != 0 {
		t.Fatalf("disk work counted as network: %q", res.Findings[0].Summary)
	}
	// The same kernel time in the network stack is reported.
	ev = testsys.Evidence(t, "e2-fixed", shares(all(0.05), all(0.55), all(0.30)))
	ev.Profiles[evidence.Perf] = perfProfile(map[int64][]string{
		1000: {"tcp_sendmsg_locked", "tcp_sendmsg", "sock_write_iter", "vfs_write", "do_syscall_64"},
	})
	res = rules.Run(facts.New(ev), []*rules.Rule{Rule})
	if len(res.Findings) != 1 {
		t.Fatalf("network kernel time not reported: %+v", res)
	}
	for _, e := range res.Findings[0].Evidence {
		if e.Name == "kernel functions in perf" && strings.Contains(e.Value, "iowrite16") {
			t.Errorf("block device function listed as network: %s", e.Value)
		}
	}
}

// Casebook L1 without perf: the process's system time is its fdatasyncs,
// which its Go CPU profile shows (a system call's kernel time is charged to
// the goroutine in it). That is disk, not network.
func TestGoProfileSyncsAreNotNetwork(t *testing.T) {
	ev := testsys.Evidence(t, "e2-fixed", shares(all(0.15), all(0.6), all(0.05)))
	delete(ev.Profiles, evidence.Perf)
	ev.Profiles[evidence.CPU] = testprof.Build(
		testprof.Stack{Value: 800, Funcs: []string{"syscall.Syscall", "syscall.Fdatasync", "example.com/wal.(*Log).Append", "net/http.(*conn).serve"}},
		testprof.Stack{Value: 200, Funcs: []string{"example.com/wal.encode", "net/http.(*conn).serve"}},
	)
	if res := rules.Run(facts.New(ev), []*rules.Rule{Rule}); len(res.Findings) != 0 {
		t.Fatalf("fdatasync's system time counted as network: %q", res.Findings[0].Summary)
	}
}

// The same on a recording (testdata/l1-bad): casebook L1's bad variant.
func TestSilentOnTheRecordedFsyncCase(t *testing.T) {
	ruletest.Run(t, "testdata", []*rules.Rule{Rule})
}
