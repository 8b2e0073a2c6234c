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
	PID       int           // 0 records every CPU (-a)
	Duration  time.Duration // at least 100ms
	Frequency int           // samples per second per CPU; 0 means 99
	Perf      string        // the perf executable; "" looks up "perf" in PATH
	TempDir   string        // for perf.data; "" means os.TempDir
	// SourceLines asks perf script for each frame's file and line (through
	// the binary's debug info; slower on large programs, so opt-in).
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

	target := []string{"-a"}
	if opt.PID > 0 {
		target = []string{"-p", strconv.Itoa(opt.PID)}
	}
	args := append([]string{"record", "-g", "-e", "cpu-clock", "-F", strconv.Itoa(opt.Frequency), "-o", data, "--quiet"}, target...)
	// `sleep` bounds the recording; perf stops with it.
	args = append(args, "--", "sleep", strconv.FormatFloat(opt.Duration.Seconds(), 'f', 3, 64))
	rctx, cancel := context.WithTimeout(ctx, opt.Duration+30*time.Second)
	defer cancel()
	var stderr bytes.Buffer
	rec := exec.CommandContext(rctx, path, args...)
	rec.Stderr = &stderr
	opt.Logger.Debug("running perf", "args", args)
	if err := rec.Run(); err != nil {
		msg := lastLine(stderr.String())
		if strings.Contains(stderr.String(), "perf_event_paranoid") {
			msg = "not permitted by kernel.perf_event_paranoid: run as root, or with CAP_PERFMON, or lower the sysctl"
		}
		return nil, fmt.Errorf("perf record: %w: %s", err, msg)
	}

	sctx, cancel2 := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel2()
	stderr.Reset()
	fields := "comm,pid,tid,time,period,event,ip,sym,dso"
	if opt.SourceLines {
		fields += ",srcline"
	}
	script := exec.CommandContext(sctx, path, "script", "-i", data, "-F", fields)
	script.Stderr = &stderr
	out, err := script.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("perf script: %w", err)
	}
	if err := script.Start(); err != nil {
		return nil, fmt.Errorf("perf script: %w", err)
	}
	p, perr := perfscript.Parse(out, perfscript.Options{})
	if perr != nil {
		io.Copy(io.Discard, out) // let perf finish writing before Wait
	}
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
	if p.DurationNanos == 0 {
		p.DurationNanos = opt.Duration.Nanoseconds()
	}
	return p, nil
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
