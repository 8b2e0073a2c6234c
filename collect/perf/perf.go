// Package perf records stacks with kernel frames through Linux perf
// (`perf record -g` on the software cpu-clock event, which works on virtual
// machines without hardware counters) and converts them to a pprof profile.
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
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/google/pprof/profile"

	"github.com/perfdoctor/perfdoctor/formats/perfscript"
)

// ErrNotInstalled means no perf executable was found.
var ErrNotInstalled = errors.New("perf is not installed (Debian/Ubuntu: apt-get install linux-perf or linux-tools-$(uname -r))")

// ErrNoSamples means perf ran but saw nothing: the process used no CPU.
var ErrNoSamples = errors.New("perf recorded no samples (the process used no CPU in the window)")

// Options say what to record.
type Options struct {
	PID int // 0 records every CPU (-a)
	// Also are more processes recorded with PID: its descendants at the
	// start. Processes any of them forks during the window are recorded
	// too (perf's inheritance), unless OnlyPID.
	Also []int
	// OnlyPID keeps PID's own samples (all its threads) and drops those of
	// the processes it forks during the window.
	OnlyPID   bool
	Duration  time.Duration // at least 100ms
	Frequency int           // samples per second per CPU; 0 means 99
	Perf      string        // the perf executable; "" looks up "perf" in PATH
	TempDir   string        // for perf.data; "" means os.TempDir
	// SourceLines names each frame's source file and line where its object
	// (or its separate debug file) has DWARF line tables.
	SourceLines bool
	Logger      *slog.Logger
}

// Record runs perf for the duration and returns the stacks it saw.
func Record(ctx context.Context, opt Options) (*profile.Profile, error) {
	if opt.Duration < 100*time.Millisecond {
		return nil, fmt.Errorf("perf: duration %s is too short", opt.Duration)
	}
	if opt.Frequency <= 0 {
		opt.Frequency = 99
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
	dir, err := os.MkdirTemp(opt.TempDir, "perfdoctor-perf-")
	if err != nil {
		return nil, fmt.Errorf("perf: %w", err)
	}
	defer os.RemoveAll(dir)
	data := filepath.Join(dir, "perf.data")

	if err := record(ctx, path, data, opt); err != nil {
		return nil, err
	}

	var lines *lineSource
	if opt.SourceLines {
		lines = newLineSource(sourceLineBudget, opt.Logger)
	}
	start := time.Now()
	p, err := script(ctx, path, data, scriptBudget, lines)
	if lines != nil {
		lines.report(start)
	}
	if err != nil {
		return nil, err
	}
	if opt.OnlyPID && opt.PID > 0 {
		keepProcess(p, int64(opt.PID))
		if len(p.Sample) == 0 {
			return nil, ErrNoSamples
		}
	}
	p.TimeNanos = time.Now().Add(-opt.Duration).UnixNano()
	if p.DurationNanos == 0 {
		p.DurationNanos = opt.Duration.Nanoseconds()
	}
	return p, nil
}

// The time the source lines of a recording's frames may take (a variable
// for the test): past it the remaining frames have none. perf script's own
// (-F srcline, an addr2line lookup per frame) took 45 s for 4 s of
// MariaDB's mariadbd; the line tables read here in Go take a fraction of a
// second (docs/overhead.md).
var sourceLineBudget = 45 * time.Second

const scriptBudget = 2 * time.Minute

// errScriptTimeout is perf script running past its budget.
var errScriptTimeout = errors.New("perf script ran past its time budget")

// script reads the recording in data through perf script, within budget,
// with each frame's source line from lines when it is not nil.
func script(ctx context.Context, path, data string, budget time.Duration, lines *lineSource) (*profile.Profile, error) {
	sctx, cancel := context.WithTimeout(ctx, budget)
	defer cancel()
	var stderr bytes.Buffer
	cmd := exec.CommandContext(sctx, path, "script", "-i", data, "-F", "comm,pid,tid,time,period,event,ip,sym,dso")
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("perf script: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("perf script: %w", err)
	}
	var opt perfscript.Options
	if lines != nil {
		opt.SourceLine = lines.line
	}
	p, perr := perfscript.Parse(out, opt)
	if perr != nil {
		io.Copy(io.Discard, out) // let perf finish writing before Wait
	}
	werr := cmd.Wait()
	switch {
	case werr != nil && sctx.Err() == context.DeadlineExceeded && ctx.Err() == nil:
		return nil, fmt.Errorf("%w (%s)", errScriptTimeout, budget)
	case errors.Is(perr, perfscript.ErrNoSamples) && werr == nil:
		return nil, ErrNoSamples
	case werr != nil:
		return nil, fmt.Errorf("perf script: %w: %s", werr, lastLine(stderr.String()))
	case perr != nil:
		return nil, fmt.Errorf("perf script output: %w", perr)
	}
	return p, nil
}

// record runs perf record into data. A descendant that exits between
// being listed and perf attaching makes perf fail at once: it is then
// run again with the processes still there, for the rest of the window.
func record(ctx context.Context, perf, data string, opt Options) error {
	start := time.Now()
	noBPF := []string{noBPFEvents}
	for {
		target := []string{"-a"}
		if opt.PID > 0 {
			opt.Also = alive(opt.Also)
			target = []string{"-p", pidList(opt)}
		}
		left := opt.Duration - time.Since(start)
		args := append(append([]string{"record", noBuildIDCache}, noBPF...), "-g", "-e", "cpu-clock", "-F", strconv.Itoa(opt.Frequency), "-o", data, "--quiet")
		args = append(args, target...)
		// `sleep` bounds the recording; perf stops with it.
		args = append(args, "--", "sleep", strconv.FormatFloat(left.Seconds(), 'f', 3, 64))
		rctx, cancel := context.WithTimeout(ctx, left+30*time.Second)
		var stderr bytes.Buffer
		rec := exec.CommandContext(rctx, perf, args...)
		rec.Stderr = &stderr
		opt.Logger.Debug("running perf", "args", args)
		err := rec.Run()
		cancel()
		if err == nil {
			return nil
		}
		if noBPF != nil && unknownOption(stderr.String(), noBPFEvents) {
			noBPF = nil
			continue
		}
		if now := alive(opt.Also); len(now) < len(opt.Also) && time.Since(start) < opt.Duration/2 && ctx.Err() == nil {
			opt.Logger.Debug("a process exited as perf attached; again without it", "err", err)
			continue
		}
		msg := lastLine(stderr.String())
		if strings.Contains(stderr.String(), "perf_event_paranoid") {
			msg = "not permitted by kernel.perf_event_paranoid: run as root, or with CAP_PERFMON, or lower the sysctl"
		}
		return fmt.Errorf("perf record: %w: %s", err, msg)
	}
}

// noBuildIDCache keeps perf record from copying every binary it sampled
// into ~/.debug, its build-ID cache (some 41 MB per Go test binary; 2.2 GB
// here after a day of tests): perf script reads the recording at once, the
// binaries still in place, so the copies only fill the disk. With and
// without it, a 3 s recording took 4.2-4.5 s.
const noBuildIDCache = "--no-buildid-cache"

// noBPFEvents skips perf record's start-up listing of the kernel's BPF
// programs (their load events and BTF, for annotating samples in them):
// with 296 programs loaded here it was 0.85 s of every perf record (a
// 0.1 s window took 1.19 s with it, 0.35 s without; a 3 s one 4.2-4.6 s
// with it). Samples in BPF programs are still named from /proc/kallsyms
// (net.core.bpf_jit_kallsyms, on by default where the JIT is).
const noBPFEvents = "--no-bpf-event"

// unknownOption reports whether perf refused the option as unknown (perf
// before 5.1 has no --no-bpf-event).
func unknownOption(stderr, opt string) bool {
	return strings.Contains(stderr, "unknown option") && strings.Contains(stderr, strings.TrimLeft(opt, "-"))
}

// alive keeps the processes that still exist and have not exited: a
// zombie (exited, not yet reaped by its parent) still answers kill(0) but
// makes perf fail to attach.
func alive(pids []int) []int {
	var out []int
	for _, p := range pids {
		if err := syscall.Kill(p, 0); (err == nil || errors.Is(err, syscall.EPERM)) && !zombie(p) {
			out = append(out, p)
		}
	}
	return out
}

// zombie reports whether /proc says the process has exited ("Z" or "X"
// after the command's closing parenthesis in its stat line).
func zombie(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false // no /proc: kill(0) alone decides
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return false
	}
	return b[i+2] == 'Z' || b[i+2] == 'X'
}

// pidList is perf's -p argument: PID and, unless OnlyPID, Also.
func pidList(opt Options) string {
	pids := []string{strconv.Itoa(opt.PID)}
	if !opt.OnlyPID {
		for _, p := range opt.Also {
			if p > 0 && p != opt.PID {
				pids = append(pids, strconv.Itoa(p))
			}
		}
	}
	return strings.Join(pids, ",")
}

// keepProcess drops the samples of processes other than pid (by their
// "pid" label); samples without one are kept.
func keepProcess(p *profile.Profile, pid int64) {
	kept := p.Sample[:0]
	for _, s := range p.Sample {
		if l := s.NumLabel["pid"]; len(l) == 0 || l[0] == pid {
			kept = append(kept, s)
		}
	}
	p.Sample = kept
}

// lastLine keeps perf's error message short: its last non-empty line.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if l := strings.TrimSpace(lines[i]); l != "" {
			return l
		}
	}
	return "no message"
}
