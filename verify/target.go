package verify

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/procfs"

	"github.com/perfdoctor/perfdoctor/collect/system"
	"github.com/perfdoctor/perfdoctor/internal/supervise"
)

// StartTarget runs command under sh -c in its own process group and waits
// until rawURL's host accepts TCP connections (for udp:// URLs, until the
// process has run for a second), failing early if the process exits. The
// command's output is kept for the error message, and copied to echo when
// echo is not nil. name ("before", "after") labels the errors.
func StartTarget(ctx context.Context, name, command, rawURL string, timeout time.Duration, echo io.Writer, log *slog.Logger) (*supervise.Process, error) {
	return StartTargetEnv(ctx, name, command, nil, rawURL, timeout, echo, log)
}

// StartTargetEnv is StartTarget with the command's environment: env, or
// perfdoctor's own when env is nil.
func StartTargetEnv(ctx context.Context, name, command string, env []string, rawURL string, timeout time.Duration, echo io.Writer, log *slog.Logger) (*supervise.Process, error) {
	u, err := url.Parse(rawURL)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("%s: %q is not a URL", name, rawURL)
	}
	// The port must be free before we start: otherwise an old process
	// would answer and we would measure the wrong thing.
	if u.Scheme != "udp" {
		if c, err := net.DialTimeout("tcp", hostPort(u), time.Second); err == nil {
			c.Close()
			return nil, fmt.Errorf("%s: %s already accepts connections before the %s command started; stop what is listening there or use another port", name, u.Host, name)
		}
	}
	out := supervise.NewTail(4096)
	cmd := exec.Command("sh", "-c", command)
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = out, out
	if echo != nil {
		cmd.Stdout, cmd.Stderr = io.MultiWriter(out, echo), io.MultiWriter(out, echo)
	}
	p, err := supervise.Start(cmd, true)
	if err != nil {
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	log.Debug("started", "service", name, "pid", p.PID(), "command", command)
	if u.Scheme == "udp" {
		// Nothing to connect to: give it a second.
		select {
		case <-p.Exited():
			return nil, fmt.Errorf("%s command exited (%s): %s", name, p.State(), out.LastLine())
		case <-ctx.Done():
			p.Stop()
			return nil, ctx.Err()
		case <-time.After(time.Second):
			return p, nil
		}
	}
	if err := p.WaitTCP(ctx, hostPort(u), timeout); err != nil {
		p.Stop()
		if errors.Is(err, supervise.ErrExited) {
			return nil, fmt.Errorf("%s command %v: %s", name, err, out.LastLine())
		}
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return p, nil
}

func hostPort(u *url.URL) string {
	if u.Port() != "" {
		return u.Host
	}
	if u.Scheme == "https" {
		return u.Host + ":443"
	}
	return u.Host + ":80"
}

// LocalPID is the process listening on rawURL's port on this host, or 0
// (remote, UDP, or not found): its CPU time then goes unmeasured.
func LocalPID(rawURL string) int {
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https" && u.Scheme != "tcp") {
		return 0
	}
	host, port, err := net.SplitHostPort(hostPort(u))
	if err != nil {
		return 0
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return 0
	}
	n, err := strconv.Atoi(port)
	if err != nil {
		return 0
	}
	pid, err := system.FindPIDByPort(system.Roots{}, n)
	if err != nil {
		return 0
	}
	return pid
}

// ProcessCPU is the process's user and system CPU time in seconds.
func ProcessCPU(pid int) (float64, bool) {
	if pid <= 0 {
		return 0, false
	}
	p, err := procfs.NewProc(pid)
	if err != nil {
		return 0, false
	}
	st, err := p.Stat()
	if err != nil {
		return 0, false
	}
	return st.CPUTime(), true
}

// cpuReading is a process's CPU time at one moment: the tick-counted total
// of /proc/PID/stat (10 ms steps) and, per thread, the scheduler's
// nanosecond run time from /proc/PID/task/TID/schedstat.
type cpuReading struct {
	stat    float64
	statOK  bool
	threads map[int]uint64 // nil when schedstat is unreadable
}

// readCPU reads the process's CPU time both ways.
func readCPU(pid int) cpuReading {
	var r cpuReading
	r.stat, r.statOK = ProcessCPU(pid)
	if !r.statOK {
		return r
	}
	dir := fmt.Sprintf("/proc/%d/task", pid)
	tasks, err := os.ReadDir(dir)
	if err != nil {
		return r
	}
	threads := make(map[int]uint64, len(tasks))
	for _, t := range tasks {
		tid, err := strconv.Atoi(t.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, t.Name(), "schedstat"))
		if err != nil {
			continue // exited between the listing and the read
		}
		fields := strings.Fields(string(b))
		if len(fields) == 0 {
			return r
		}
		ns, err := strconv.ParseUint(fields[0], 10, 64)
		if err != nil {
			return r
		}
		threads[tid] = ns
	}
	r.threads = threads
	return r
}

// cpuSince is the CPU time in seconds from a to b. It sums the threads'
// scheduler run times when every thread of a is still there in b: exact
// to the nanosecond, where the tick count's 10 ms steps would make a
// short measurement's CPU per request jump by percents. A thread that
// exited took its time with it, so then the tick count decides.
func cpuSince(a, b cpuReading) (float64, bool) {
	if !a.statOK || !b.statOK {
		return 0, false
	}
	if a.threads != nil && b.threads != nil {
		var ns uint64
		precise := true
		for tid, t0 := range a.threads {
			t1, ok := b.threads[tid]
			if !ok || t1 < t0 {
				precise = false
				break
			}
			ns += t1 - t0
		}
		if precise {
			for tid, t1 := range b.threads {
				if _, ok := a.threads[tid]; !ok {
					ns += t1 // started during the measurement
				}
			}
			return float64(ns) / 1e9, true
		}
	}
	return b.stat - a.stat, true
}

// peakRSS is the process's peak resident set size in bytes (VmHWM), 0 when
// unknown.
func peakRSS(pid int) uint64 {
	if pid <= 0 {
		return 0
	}
	p, err := procfs.NewProc(pid)
	if err != nil {
		return 0
	}
	st, err := p.NewStatus()
	if err != nil {
		return 0
	}
	return st.VmHWM
}
