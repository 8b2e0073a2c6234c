// Package supervise runs child processes that perfdoctor starts and must
// stop: demo's sample service, verify's --before-cmd/--after-cmd, and the
// casebook's services under test. A child is stopped by its own PID (or
// its own process group), never by name: SIGTERM, then SIGKILL after a
// grace period.
package supervise

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Grace is how long Stop waits after SIGTERM before SIGKILL.
const Grace = 5 * time.Second

// Process is a started child.
type Process struct {
	cmd   *exec.Cmd
	group bool
	done  chan struct{}
	once  sync.Once
}

// Start starts cmd. With group, the child gets its own process group and
// Stop signals the whole group (a shell and what it started). The child is
// killed if perfdoctor dies without stopping it (Linux's parent-death
// signal): a test binary killed by its timeout left a casebook service
// running, holding what it had inherited (a lock file's descriptor among
// them) until someone found it.
func Start(cmd *exec.Cmd, group bool) (*Process, error) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	if group {
		cmd.SysProcAttr.Setpgid = true
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &Process{cmd: cmd, group: group, done: make(chan struct{})}
	go func() { cmd.Wait(); close(p.done) }()
	return p, nil
}

// StartLine starts cmd and waits until a line of its standard output starts
// with prefix, returning the rest of that line. The child's later output is
// drained. If the child exits first, ctx ends or timeout passes, the child is
// stopped and an error returned.
func StartLine(ctx context.Context, cmd *exec.Cmd, prefix string, timeout time.Duration) (*Process, string, error) {
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, "", err
	}
	if cmd.Stderr == nil {
		cmd.Stderr = os.Stderr
	}
	p, err := Start(cmd, false)
	if err != nil {
		return nil, "", err
	}
	ready := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if rest, ok := strings.CutPrefix(sc.Text(), prefix); ok {
				ready <- rest
				break
			}
		}
		close(ready)
		for sc.Scan() { // keep the pipe drained
		}
	}()
	name := filepath.Base(cmd.Path)
	select {
	case rest, ok := <-ready:
		if ok {
			return p, rest, nil
		}
		err = fmt.Errorf("%s exited before printing %q", name, prefix)
	case <-time.After(timeout):
		err = fmt.Errorf("%s did not print %q within %s", name, prefix, timeout)
	case <-ctx.Done():
		err = ctx.Err()
	}
	p.Stop()
	return nil, "", err
}

// PID is the child's process ID.
func (p *Process) PID() int { return p.cmd.Process.Pid }

// Exited is closed when the child has exited.
func (p *Process) Exited() <-chan struct{} { return p.done }

// State describes how the child exited; nil while it runs.
func (p *Process) State() *os.ProcessState {
	select {
	case <-p.done:
		return p.cmd.ProcessState
	default:
		return nil
	}
}

// Stop ends the child (its group, if started with one): SIGTERM, then
// SIGKILL after Grace. It returns once the child has exited; calling it
// again does nothing.
func (p *Process) Stop() {
	p.once.Do(func() {
		p.signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(Grace):
			p.signal(syscall.SIGKILL)
			<-p.done
		}
		if p.group && !p.groupGone(time.Second) {
			// The leader is gone but a child that ignored SIGTERM (or was
			// still dying when the leader was reaped) is not.
			p.signal(syscall.SIGKILL)
			p.groupGone(time.Second)
		}
	})
}

// groupGone waits up to d for the process group to have no live process
// left, and says whether it has none. Zombies do not count: a child whose
// parent (the leader) is gone waits for a reaper perfdoctor is not.
func (p *Process) groupGone(d time.Duration) bool {
	deadline := time.Now().Add(d)
	for {
		if !groupAlive(p.cmd.Process.Pid) {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// groupAlive reports whether a process of group pgid other than a zombie
// runs, from /proc/PID/stat ("pid (comm) state ppid pgrp ...").
func groupAlive(pgid int) bool {
	if err := syscall.Kill(-pgid, 0); errors.Is(err, syscall.ESRCH) {
		return false
	}
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return true // cannot tell: assume it runs
	}
	for _, e := range ents {
		if e.Name()[0] < '0' || e.Name()[0] > '9' {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(b[i+1:]))
		if len(f) >= 3 && f[2] == strconv.Itoa(pgid) && f[0] != "Z" && f[0] != "X" {
			return true
		}
	}
	return false
}

func (p *Process) signal(sig syscall.Signal) {
	if p.group {
		syscall.Kill(-p.cmd.Process.Pid, sig)
		return
	}
	p.cmd.Process.Signal(sig)
}

// ErrExited is returned by WaitTCP when the child exits first.
var ErrExited = errors.New("exited")

// WaitTCP waits until addr (host:port) accepts TCP connections. It fails
// when the child exits first (wrapping ErrExited), ctx ends or timeout passes.
func (p *Process) WaitTCP(ctx context.Context, addr string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		if c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond); err == nil {
			c.Close()
			return nil
		}
		select {
		case <-p.done:
			return fmt.Errorf("%w before %s accepted connections (%s)", ErrExited, addr, p.cmd.ProcessState)
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s did not accept connections within %s", addr, timeout)
		}
	}
}

// Tail keeps the last bytes written to it, for error messages that quote
// what a child printed before it failed.
type Tail struct {
	mu  sync.Mutex
	max int
	b   []byte
}

// NewTail keeps the last max bytes.
func NewTail(max int) *Tail { return &Tail{max: max} }

func (t *Tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = t.b[len(t.b)-t.max:]
	}
	return len(p), nil
}

// LastLine is the last non-empty line written, or "no output".
func (t *Tail) LastLine() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	lines := bytes.Split(bytes.TrimSpace(t.b), []byte("\n"))
	if len(lines) == 0 || len(lines[len(lines)-1]) == 0 {
		return "no output"
	}
	return string(lines[len(lines)-1])
}
