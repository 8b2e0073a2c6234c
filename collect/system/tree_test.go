package system

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/pprof/profile"

	"github.com/perfdoctor/perfdoctor/bundle"
)

// SnapshotTree on a real tree: a shell whose child runs a grandchild. Each
// descendant is there with its parent, command line and figures.
func TestSnapshotTree(t *testing.T) {
	cmd := exec.Command("sh", "-c", `sh -c 'sleep 30; true' & wait`)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // one signal ends the tree
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); cmd.Wait() })
	var snap *bundle.SystemSnapshot
	for range 100 { // until the grandchild has started
		var err error
		if snap, err = SnapshotTree(Roots{}, cmd.Process.Pid); err != nil {
			t.Fatal(err)
		}
		if len(snap.Children) == 2 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if len(snap.Children) != 2 {
		t.Fatalf("children %+v, want the shell and its sleep", snap.Children)
	}
	byCmd := map[string]bundle.ProcessInfo{}
	for _, c := range snap.Children {
		byCmd[c.Cmdline] = c
	}
	child, grandchild := byCmd[`sh -c "sleep 30; true"`], byCmd["sleep 30"]
	if child.PPID != cmd.Process.Pid || grandchild.PPID != child.PID || grandchild.Threads != 1 || grandchild.OpenFDs == 0 {
		t.Errorf("children %+v", snap.Children)
	}
	tree, err := Descendants(Roots{}, cmd.Process.Pid)
	if err != nil || !slices.Contains(tree, child.PID) || !slices.Contains(tree, grandchild.PID) {
		t.Errorf("descendants %v, %v", tree, err)
	}
	// The process alone: no children read.
	alone, err := Snapshot(Roots{}, cmd.Process.Pid)
	if err != nil || len(alone.Children) != 0 || alone.Process.PPID != os.Getpid() {
		t.Errorf("Snapshot: %+v, %v", alone, err)
	}
}

func proc(pid, ppid int, cmdline string, cpu float64) bundle.ProcessInfo {
	return bundle.ProcessInfo{PID: pid, PPID: ppid, Cmdline: cmdline, UserCPUSeconds: cpu, StartTime: float64(pid), Threads: 1, OpenFDs: 10}
}

// Tree over two snapshots of an idle postmaster with busy backends: where
// the work is, by command line without client ports; backends that came
// during the window count from their start, those gone from their
// parent's reaped time.
func TestTreeUsage(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	master := proc(812, 1, "/usr/lib/postgresql/15/bin/postgres -D /srv/pg", 10)
	start := &bundle.SystemSnapshot{Time: t0, Process: &master, Children: []bundle.ProcessInfo{
		proc(900, 812, "postgres: checkpointer", 1),
		proc(901, 812, "postgres: bench bench 127.0.0.1(40001) idle", 5),
		proc(902, 812, "postgres: bench bench 127.0.0.1(40002) idle", 5),
		proc(903, 812, "postgres: bench bench 127.0.0.1(40003) idle", 5), // exits in the window
	}}
	masterEnd := proc(812, 1, master.Cmdline, 10.02)
	masterEnd.ExitedChildrenCPUSeconds = 5 + 2 // backend 903 (5 s before, 2 s in the window)
	end := &bundle.SystemSnapshot{Time: t0.Add(10 * time.Second), Process: &masterEnd, Children: []bundle.ProcessInfo{
		proc(900, 812, "postgres: checkpointer", 1.1),
		proc(901, 812, "postgres: bench bench 127.0.0.1(40001) idle", 13),
		proc(902, 812, "postgres: bench bench 127.0.0.1(40002) idle in transaction", 9),
		proc(904, 812, "postgres: bench bench 127.0.0.1(40004) idle", 4), // forked in the window
	}}
	u := Tree(start, end)
	if u == nil {
		t.Fatal("no tree")
	}
	near := func(a, b float64) bool { return a-b < 1e-9 && b-a < 1e-9 }
	// Children: 0.1 + 8 + 4 + 4 = 16.1 s in 10 s, and 2 s of the one that exited.
	if !near(u.Cores, 0.002) || !near(u.ExitedCores, 0.2) || !near(u.ChildCores, 1.81) || u.Children != 5 {
		t.Errorf("usage %+v", u)
	}
	if len(u.Groups) != 3 || u.Groups[0].Name != "postgres: bench bench 127.0.0.1 idle" || !slices.Equal(u.Groups[0].PIDs, []int{901, 904}) || !near(u.Groups[0].Cores, 1.2) {
		t.Errorf("groups %+v", u.Groups)
	}
	p := &profile.Profile{SampleType: []*profile.ValueType{{Type: "samples", Unit: "count"}}}
	for pid, n := range map[int64]int64{812: 1, 901: 60, 904: 30, 999: 9} {
		p.Sample = append(p.Sample, &profile.Sample{Value: []int64{n}, NumLabel: map[string][]int64{"pid": {pid}}})
	}
	u.AddSamples(p)
	if u.Samples != 1 || u.ChildSamples != 99 || u.Groups[0].Samples != 90 {
		t.Errorf("samples %d, %d, groups %+v", u.Samples, u.ChildSamples, u.Groups)
	}
	want := "pid 812 (postgres -D /srv/pg) used 0.2% of a core; its 5 descendants 1.81 cores: " +
		"1.20 in 2 processes 'postgres: bench bench 127.0.0.1 idle', 0.40 in 1 process 'postgres: bench bench 127.0.0.1 idle in transaction', " +
		"0.01 in 1 process 'postgres: checkpointer', 0.20 in processes that exited; perf: 99% of the tree's samples in its descendants"
	if got := u.Sentence(); got != want {
		t.Errorf("sentence\n got %s\nwant %s", got, want)
	}

	// No descendants: nothing to say.
	lone := &bundle.SystemSnapshot{Time: t0, Process: &master}
	reaper := proc(812, 1, master.Cmdline, 10)
	reaper.ExitedChildrenCPUSeconds = 0.7
	if u := Tree(lone, &bundle.SystemSnapshot{Time: t0.Add(time.Second), Process: &reaper}); u == nil || !strings.Contains(u.Sentence(), "its descendants 0.70 cores: 0.70 in processes that exited") {
		t.Errorf("a parent whose children all exited: %+v", u)
	}
	if u := Tree(lone, &bundle.SystemSnapshot{Time: t0.Add(time.Second), Process: &master}); u != nil {
		t.Errorf("no descendants: %+v", u)
	}
}

// A multi-process server's connections are its workers': the parent shell
// holds none, its child holds one to a listener of the test's, and the
// tree's snapshot counts it as the target's (Apache's children hold the
// proxied connections, not the master).
func TestSnapshotTreeCountsDescendantsSockets(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("bash opens the child's connection (/dev/tcp)")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	cmd := exec.Command("sh", "-c", fmt.Sprintf(`bash -c 'exec 3<>/dev/tcp/127.0.0.1/%d; sleep 30' & wait`, port))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); cmd.Wait() })
	peer := ln.Addr().String()
	held := func(snap *bundle.SystemSnapshot) int {
		for _, r := range snap.Net.Remotes {
			if r.Addr == peer {
				return r.Process
			}
		}
		return 0
	}
	var tree *bundle.SystemSnapshot
	for range 100 { // until the child has connected
		if tree, err = SnapshotTree(Roots{}, cmd.Process.Pid); err != nil {
			t.Fatal(err)
		}
		if held(tree) == 1 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if !tree.Net.ProcessSockets || held(tree) != 1 {
		t.Errorf("the tree's snapshot: %+v, want the child's connection to %s counted", tree.Net.Remotes, peer)
	}
	alone, err := Snapshot(Roots{}, cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	if held(alone) != 0 {
		t.Errorf("the parent alone holds no connection: %+v", alone.Net.Remotes)
	}
}
