package perf

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/pprof/profile"

	"github.com/perfdoctor/perfdoctor/collect/system"
)

// forker is an idle parent that runs a busy child from the start and
// forks a second one when told to (a line written to the FIFO "go"); each
// busy shell writes its own PID, so it exists when the test reads it, and
// stops by itself after a minute (the test's cleanup ends it sooner).
const forker = `
timeout --foreground 60 sh -c 'echo $$ > "$0/first"; while :; do :; done' "$1" &
read go < "$1/go"
timeout --foreground 60 sh -c 'echo $$ > "$0/second"; while :; do :; done' "$1" &
wait
`

// napForker is forker with children that nap: each shell waits for the
// sleep it runs, off the CPU, as a server's process waits for a client.
const napForker = `
timeout --foreground 60 sh -c 'echo $$ > "$0/first"; while :; do sleep 0.01; done' "$1" &
read go < "$1/go"
timeout --foreground 60 sh -c 'echo $$ > "$0/second"; while :; do sleep 0.01; done' "$1" &
wait
`

// startForker starts a forker script and returns its PID, a function reading a
// child's PID once it has written it, and one telling the parent to fork
// the second child.
func startForker(t *testing.T, script string) (int, func(string) int, func()) {
	t.Helper()
	if _, err := exec.LookPath("perf"); err != nil {
		t.Skip("perf is not installed (scripts/test.sh installs linux-perf)")
	}
	dir := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(dir, "go"), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("sh", "-c", script, "forker", dir)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	child := func(name string) int {
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			if b, err := os.ReadFile(filepath.Join(dir, name)); err == nil && len(b) > 0 && b[len(b)-1] == '\n' {
				pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
				return pid
			}
		}
		t.Fatalf("the forker never wrote %s", name)
		return 0
	}
	fork := func() {
		// The parent is reading the FIFO, so opening it does not block.
		if err := os.WriteFile(filepath.Join(dir, "go"), []byte("go\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		for _, name := range []string{"first", "second"} {
			if b, err := os.ReadFile(filepath.Join(dir, name)); err == nil {
				if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
					syscall.Kill(pid, syscall.SIGKILL) // the test's own children's children
				}
			}
		}
		killGroup(cmd)
	})
	return cmd.Process.Pid, child, fork
}

// recording waits until a perf started by this process records: perf
// runs its workload (the sleep bounding the window) only once it has
// attached to every process it was given.
func recording(t *testing.T, failed <-chan struct{}) {
	t.Helper()
	comm := func(pid string) string {
		b, _ := os.ReadFile("/proc/" + pid + "/comm")
		return strings.TrimSpace(string(b))
	}
	ppid := func(pid string) string {
		b, _ := os.ReadFile("/proc/" + pid + "/stat")
		if i := strings.LastIndexByte(string(b), ')'); i >= 0 {
			if f := strings.Fields(string(b[i+1:])); len(f) > 1 {
				return f[1]
			}
		}
		return ""
	}
	me := strconv.Itoa(os.Getpid())
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		select {
		case <-failed:
			return // Record returned: its error is the test's to report
		default:
		}
		ents, _ := os.ReadDir("/proc")
		for _, e := range ents {
			pid := e.Name()
			if pid[0] < '0' || pid[0] > '9' || comm(pid) != "sleep" {
				continue
			}
			if perf := ppid(pid); comm(perf) == "perf" && ppid(perf) == me {
				return
			}
		}
	}
	t.Fatal("perf did not start recording within 60 s")
}

// perf records a process's tree: the child alive at the start (passed in
// Also) and the one forked during the window (followed by perf's
// inheritance), each sample with its own pid; OnlyPID keeps the idle
// parent alone. The second child is forked once perf records: forked a
// fixed second after the first, it came before perf had attached on a
// machine beside two CPU hogs (7 of 10 runs: no sample of it, the run
// taking 8 s instead of 3.5).
func TestRecordTree(t *testing.T) {
	r := forkWhileRecording(t, forker, Record)
	p, err, parent, tree := r.p, r.err, r.parent, r.tree
	if err != nil {
		if strings.Contains(err.Error(), "not permitted") {
			t.Skip(err)
		}
		t.Fatal(err)
	}
	samples := map[int64]int64{}
	for _, s := range p.Sample {
		samples[s.NumLabel["pid"][0]] += s.Value[0]
	}
	var atStart, forked int64
	for pid, n := range samples {
		if slices.Contains(tree, int(pid)) {
			atStart += n
		} else if pid != int64(parent) {
			forked += n
		}
	}
	t.Logf("samples by pid: %v (parent %d, descendants at the start %v)", samples, parent, tree)
	if atStart < 10 || forked < 10 {
		t.Errorf("samples by pid %v: want the busy child there at the start and the one forked in the window", samples)
	}

	// The parent alone: it only waits, so there is nothing to record.
	_, err = Record(context.Background(), Options{PID: parent, Also: tree, OnlyPID: true, Duration: time.Second})
	if !errors.Is(err, ErrNoSamples) {
		t.Errorf("the idle parent alone: %v, want ErrNoSamples", err)
	}
}

// A descendant gone between being listed and perf attaching does not
// cost the recording.
func TestRecordTreeChildGone(t *testing.T) {
	parent, child, _ := startForker(t, forker)
	child("first")
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	p, err := Record(context.Background(), Options{PID: parent, Also: append([]int{gone.Process.Pid}, descendants(t, parent)...), Duration: time.Second})
	if err != nil {
		if strings.Contains(err.Error(), "not permitted") {
			t.Skip(err)
		}
		t.Fatal(err)
	}
	if len(p.Sample) == 0 {
		t.Error("no samples")
	}
}

// Off the CPU too, the tree's processes are recorded, each sample with
// its pid: here a child shell waiting for the sleep it runs.
func TestOffCPUTree(t *testing.T) {
	if _, err := exec.LookPath("perf"); err != nil {
		t.Skip("perf is not installed (scripts/test.sh installs linux-perf)")
	}
	dir := t.TempDir()
	cmd := exec.Command("sh", "-c", `timeout --foreground 8 sh -c 'echo $$ > "$0/napper"; while :; do sleep 0.01; done' "$1" & wait`, "tree", dir)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { killGroup(cmd) })
	var napper int
	for range 100 {
		if b, err := os.ReadFile(filepath.Join(dir, "napper")); err == nil && strings.HasSuffix(string(b), "\n") {
			napper, _ = strconv.Atoi(strings.TrimSpace(string(b)))
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if napper == 0 {
		t.Fatal("no child")
	}
	t.Cleanup(func() { syscall.Kill(napper, syscall.SIGKILL) })
	// The napping shell writes its own pid, so it exists when the tree is
	// read: with timeout's pid written instead, a busy machine read the
	// tree before timeout had forked the shell, and nothing napped in it.
	tree := descendants(t, cmd.Process.Pid)
	if !slices.Contains(tree, napper) {
		t.Fatalf("descendants %v miss the napping shell %d", tree, napper)
	}
	p, err := RecordOffCPU(context.Background(), Options{PID: cmd.Process.Pid, Also: tree, Duration: time.Second})
	if errors.Is(err, ErrSchedNotPermitted) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	off := map[int64]int64{}
	var children int64
	for _, s := range p.Sample {
		pid := s.NumLabel["pid"][0]
		off[pid] += s.Value[0]
		if slices.Contains(tree, int(pid)) {
			children += s.Value[0]
		}
	}
	if children < int64(100*time.Millisecond) {
		t.Errorf("off-CPU by pid %v: want the waits of the descendants %v", off, tree)
	}
}

// A process the tree forks during the off-CPU recording is recorded too
// (perf's sched_process_fork events): the second napping shell, forked
// once perf records, waits off the CPU with its pid on the samples.
func TestOffCPUTreeFollowsForks(t *testing.T) {
	r := forkWhileRecording(t, napForker, RecordOffCPU)
	first, second := r.first, r.second
	if errors.Is(r.err, ErrSchedNotPermitted) {
		t.Skip(r.err)
	}
	if r.err != nil {
		t.Fatal(r.err)
	}
	off := map[int64]time.Duration{}
	for _, s := range r.p.Sample {
		off[s.NumLabel["pid"][0]] += time.Duration(s.Value[0])
	}
	t.Logf("off-CPU by pid: %v (first %d, second %d)", off, first, second)
	if off[int64(first)] <= 0 || off[int64(second)] <= 0 {
		t.Errorf("off-CPU by pid %v: want the napping shell there at the start (%d) and the one forked in the window (%d)", off, first, second)
	}
}

// forkRun is what forkWhileRecording saw: record's result, the forker's
// PID, its descendants at the start and its two children's PIDs.
type forkRun struct {
	p                     *profile.Profile
	err                   error
	parent, first, second int
	tree                  []int
}

// forkWhileRecording starts a forker script, records its tree for 2.5 s
// with record, and has it fork its second child once perf records.
func forkWhileRecording(t *testing.T, script string, record func(context.Context, Options) (*profile.Profile, error)) forkRun {
	t.Helper()
	parent, child, fork := startForker(t, script)
	r := forkRun{parent: parent, first: child("first")}
	r.tree = descendants(t, parent)
	returned := make(chan struct{})
	go func() {
		defer close(returned)
		r.p, r.err = record(context.Background(), Options{PID: parent, Also: r.tree, Duration: 2500 * time.Millisecond})
	}()
	recording(t, returned)
	fork()
	r.second = child("second")
	<-returned
	return r
}

// descendants lists pid's descendants as collect does before recording.
func descendants(t *testing.T, pid int) []int {
	t.Helper()
	tree, err := system.Descendants(system.Roots{}, pid)
	if err != nil || len(tree) == 0 {
		t.Fatalf("descendants of %d: %v, %v", pid, tree, err)
	}
	return tree
}

// killGroup ends a test's shell and every process it started. The shells
// run in their own process group and their timeouts in the foreground
// (timeout otherwise makes a group of its own), so one signal reaches all:
// a SIGKILL to the shell or a timeout alone would leave its busy child running.
func killGroup(cmd *exec.Cmd) {
	syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	cmd.Wait()
}

// A child that exited but was not reaped answers kill(0) yet is gone for
// perf: alive leaves it out.
func TestAliveLeavesZombiesOut(t *testing.T) {
	cmd := exec.Command("true")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	for range 100 { // until it has exited; it stays a zombie until Wait
		if zombie(pid) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if got := alive([]int{pid, os.Getpid()}); !slices.Equal(got, []int{os.Getpid()}) {
		t.Errorf("alive = %v, want only this process %d (the zombie %d left out)", got, os.Getpid(), pid)
	}
	cmd.Wait()
}
