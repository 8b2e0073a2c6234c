package perf

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/pprof/profile"

	"github.com/perfdoctor/perfdoctor/formats/perfscript"
)

// ErrSchedNotPermitted means the kernel refused perf's scheduler
// tracepoints here: not root and no CAP_PERFMON under
// kernel.perf_event_paranoid, or no tracefs to find sched:sched_switch in.
var ErrSchedNotPermitted = errors.New("scheduler tracepoints (sched:sched_switch) are not permitted here")

// RecordOffCPU records where process opt.PID's threads (and those of the
// processes in opt.Also, its descendants, and of the processes they fork
// while it records) wait off the CPU:
// perf's sched:sched_switch events with stacks on every CPU, kept for
// switches out of and into the process (a kernel filter on its command
// name; the conversion keeps only its PID), turned into off-CPU time by
// stack and state (see perfscript.ParseOffCPU). Unlike sampling on-CPU
// time it works for any process, native or JVM, without its cooperation.
// Refused tracepoints return an error wrapping ErrSchedNotPermitted whose
// text says why in one line.
func RecordOffCPU(ctx context.Context, opt Options) (*profile.Profile, error) {
	if opt.PID <= 0 {
		return nil, errors.New("perf off-CPU: needs a process id")
	}
	if opt.Duration < 100*time.Millisecond {
		return nil, fmt.Errorf("perf off-CPU: duration %s is too short", opt.Duration)
	}
	if opt.Logger == nil {
		opt.Logger = slog.New(slog.DiscardHandler)
	}
	bin := opt.Perf
	if bin == "" {
		bin = "perf"
	}
	path, err := exec.LookPath(bin)
	if err != nil {
		return nil, ErrNotInstalled
	}
	comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", opt.PID))
	if err != nil {
		return nil, fmt.Errorf("perf off-CPU: %w", err)
	}
	// The process and, unless OnlyPID, its descendants at the start; the
	// kernel filter is on their command names.
	pids := map[int]bool{opt.PID: true}
	names := []string{strings.TrimSpace(string(comm))}
	if !opt.OnlyPID {
		for _, p := range opt.Also {
			c, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", p))
			if err != nil {
				continue // exited
			}
			pids[p] = true
			if n := strings.TrimSpace(string(c)); !slices.Contains(names, n) && len(names) < maxFilterNames {
				names = append(names, n)
			}
		}
	}
	dir, err := os.MkdirTemp(opt.TempDir, "perfdoctor-offcpu-")
	if err != nil {
		return nil, fmt.Errorf("perf off-CPU: %w", err)
	}
	defer os.RemoveAll(dir)
	data := filepath.Join(dir, "perf.data")
	// Switch-ins happen on other tasks' events, so the recording is
	// system-wide (-a); the filter keeps the kernel from writing the rest.
	var terms, forkTerms []string
	for _, n := range names {
		terms = append(terms, fmt.Sprintf("prev_comm == %q || next_comm == %q", n, n))
		forkTerms = append(forkTerms, fmt.Sprintf("comm == %q", n))
	}
	args := []string{"record", noBuildIDCache, noBPFEvents, "-e", "sched:sched_switch", "--filter", strings.Join(terms, " || ")}
	if !opt.OnlyPID {
		// The tree's forks, so processes born in the window are kept: a
		// server forking per connection (PostgreSQL under pgbench, which
		// reconnects every run) had none of its new backends recorded.
		args = append(args, "-e", "sched:sched_process_fork", "--filter", strings.Join(forkTerms, " || "))
	}
	args = append(args, "-g", "-a", "-o", data, "--quiet", "--", "sleep", strconv.FormatFloat(opt.Duration.Seconds(), 'f', 3, 64))
	rctx, cancel := context.WithTimeout(ctx, opt.Duration+30*time.Second)
	defer cancel()
	var stderr bytes.Buffer
	rec := exec.CommandContext(rctx, path, args...)
	rec.Stderr = &stderr
	opt.Logger.Debug("running perf", "args", args)
	err = rec.Run()
	if err != nil && unknownOption(stderr.String(), noBPFEvents) {
		stderr.Reset()
		rec = exec.CommandContext(rctx, path, slices.DeleteFunc(args, func(a string) bool { return a == noBPFEvents })...)
		rec.Stderr = &stderr
		err = rec.Run()
	}
	if err != nil {
		if why := schedRefusal(stderr.String()); why != "" {
			return nil, fmt.Errorf("%w: %s", ErrSchedNotPermitted, why)
		}
		return nil, fmt.Errorf("perf record (sched_switch): %w: %s", err, lastLine(stderr.String()))
	}
	sctx, cancel2 := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel2()
	stderr.Reset()
	script := exec.CommandContext(sctx, path, "script", "-i", data, "-F", "comm,pid,tid,time,event,trace,ip,sym,dso")
	script.Stderr = &stderr
	out, err := script.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("perf script: %w", err)
	}
	if err := script.Start(); err != nil {
		return nil, fmt.Errorf("perf script: %w", err)
	}
	parse := perfscript.ParseOffCPUTree
	if opt.OnlyPID {
		parse = perfscript.ParseOffCPUOf
	}
	p, perr := parse(out, func(pid int) bool { return pids[pid] })
	io.Copy(io.Discard, out) // let perf finish writing before Wait
	werr := script.Wait()
	switch {
	case errors.Is(perr, perfscript.ErrNoSamples) && werr == nil:
		return nil, ErrNoSamples
	case werr != nil:
		return nil, fmt.Errorf("perf script: %w: %s", werr, lastLine(stderr.String()))
	case perr != nil:
		return nil, fmt.Errorf("perf script output: %w", perr)
	}
	p.TimeNanos = time.Now().Add(-opt.Duration).UnixNano()
	p.DurationNanos = opt.Duration.Nanoseconds()
	return p, nil
}

// maxFilterNames bounds the command names in the kernel's filter; a
// tree's processes beyond them (rare: most run the same program) are not
// recorded off the CPU.
const maxFilterNames = 8

// schedRefusal says in one line why perf could not open the tracepoint, or
// "" when the failure is something else.
func schedRefusal(stderr string) string {
	switch {
	case strings.Contains(stderr, "perf_event_paranoid"), strings.Contains(stderr, "Permission denied"), strings.Contains(stderr, "No permission"):
		return "kernel.perf_event_paranoid refuses system-wide tracepoints to this user: run as root or with CAP_PERFMON, or lower the sysctl"
	case strings.Contains(stderr, "tracefs"), strings.Contains(stderr, "debugfs"), strings.Contains(stderr, "unknown tracepoint"), strings.Contains(stderr, "event syntax error"):
		return "the kernel's sched tracepoints are not reachable (tracefs not mounted, or a kernel without them): mount -t tracefs nodev /sys/kernel/tracing"
	}
	return ""
}
