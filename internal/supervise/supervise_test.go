package supervise

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestStartLineReturnsTheReadyLineAndStopEndsTheChild(t *testing.T) {
	p, rest, err := StartLine(context.Background(), exec.Command("sh", "-c", "echo starting; echo 'ready app=x'; exec sleep 30"), "ready ", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if rest != "app=x" {
		t.Errorf("rest = %q, want app=x", rest)
	}
	p.Stop()
	if p.State() == nil {
		t.Fatal("Stop returned while the child runs")
	}
	p.Stop() // a second Stop does nothing
}

func TestStartLineFailsWhenTheChildExitsFirst(t *testing.T) {
	_, _, err := StartLine(context.Background(), exec.Command("sh", "-c", "echo nothing"), "ready ", 10*time.Second)
	if err == nil || !strings.Contains(err.Error(), `exited before printing "ready "`) {
		t.Fatalf("err = %v", err)
	}
}

func TestGroupStopEndsTheShell(t *testing.T) {
	// sh waits for its background child; SIGTERM to the group ends both.
	g, err := Start(exec.Command("sh", "-c", "sleep 30 & wait"), true)
	if err != nil {
		t.Fatal(err)
	}
	g.Stop()
	if g.State() == nil {
		t.Fatal("group Stop returned while the shell runs")
	}
}

func TestWaitTCP(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	p, err := Start(exec.Command("sleep", "30"), false)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop()
	if err := p.WaitTCP(context.Background(), ln.Addr().String(), 5*time.Second); err != nil {
		t.Errorf("listening address: %v", err)
	}
	q, err := Start(exec.Command("sh", "-c", "exit 3"), false)
	if err != nil {
		t.Fatal(err)
	}
	free, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := free.Addr().String()
	free.Close()
	if err := q.WaitTCP(context.Background(), addr, 5*time.Second); !errors.Is(err, ErrExited) {
		t.Errorf("exited child: err = %v, want ErrExited", err)
	}
}

func TestTailKeepsTheLastLine(t *testing.T) {
	tl := NewTail(16)
	if got := tl.LastLine(); got != "no output" {
		t.Errorf("empty: %q", got)
	}
	tl.Write([]byte("a long first line\nsecond\n"))
	if got := tl.LastLine(); got != "second" {
		t.Errorf("LastLine = %q", got)
	}
}

// A child that ignores SIGTERM outlives its group's leader: Stop kills it
// too rather than leave it running.
func TestStopKillsWhatOutlivesTheLeader(t *testing.T) {
	pidFile := t.TempDir() + "/child"
	p, err := Start(exec.Command("sh", "-c", "(trap '' TERM; exec sleep 30) & echo $! > "+pidFile+"; wait"), true)
	if err != nil {
		t.Fatal(err)
	}
	var child string
	for deadline := time.Now().Add(10 * time.Second); child == ""; time.Sleep(10 * time.Millisecond) {
		b, _ := os.ReadFile(pidFile)
		child = strings.TrimSpace(string(b))
		if time.Now().After(deadline) {
			t.Fatal("the child's pid was never written")
		}
	}
	p.Stop()
	if st, err := os.ReadFile("/proc/" + child + "/stat"); err == nil && !strings.Contains(string(st), ") Z ") {
		t.Errorf("child %s still runs after Stop: %s", child, st)
	}
}

// A child outlives nothing that started it: the test runs itself as a
// parent that starts a sleep through Start, kills that parent with
// SIGKILL (no chance to stop anything), and the sleep goes with it.
func TestChildDiesWithItsParent(t *testing.T) {
	if os.Getenv("SUPERVISE_TEST_PARENT") == "1" {
		p, err := Start(exec.Command("sleep", "60"), false)
		if err != nil {
			os.Exit(2)
		}
		fmt.Println(p.cmd.Process.Pid)
		time.Sleep(time.Minute)
		os.Exit(0)
	}
	parent := exec.Command(os.Args[0], "-test.run=^TestChildDiesWithItsParent$")
	parent.Env = append(os.Environ(), "SUPERVISE_TEST_PARENT=1")
	out, err := parent.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := parent.Start(); err != nil {
		t.Fatal(err)
	}
	var child int
	if _, err := fmt.Fscan(out, &child); err != nil || child <= 0 {
		parent.Process.Kill()
		t.Fatalf("the parent printed no child: %v", err)
	}
	parent.Process.Kill()
	parent.Wait()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if err := syscall.Kill(child, 0); errors.Is(err, syscall.ESRCH) {
			return
		}
		// A zombie until init reaps it: gone all the same.
		if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", child)); err == nil && strings.Contains(string(b), ") Z ") {
			return
		}
	}
	syscall.Kill(child, syscall.SIGKILL)
	t.Fatalf("child %d outlived its killed parent", child)
}
