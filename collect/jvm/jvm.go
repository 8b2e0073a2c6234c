// Package jvm collects a bundle from a running JVM with Java Flight
// Recorder: it starts a recording through jcmd, waits, dumps it, converts
// it natively (formats/jfr) and writes the profiles and a redacted JVM
// summary. The raw recording is not kept: it holds the process's
// environment variables and unredacted system properties.
package jvm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/perfdoctor/perfdoctor/internal/version"

	"github.com/google/pprof/profile"

	"github.com/perfdoctor/perfdoctor/bundle"
	"github.com/perfdoctor/perfdoctor/collect/system"
	"github.com/perfdoctor/perfdoctor/formats/jfr"
	"github.com/perfdoctor/perfdoctor/internal/progress"
	"github.com/perfdoctor/perfdoctor/internal/redact"
)

// Options configure a collection.
type Options struct {
	PID      int
	Duration time.Duration // recording length, 1s to 10m
	OutDir   string
	// Settings is the JFR configuration: "profile" (10 ms execution
	// sampling, allocation and lock events) or "default" (lighter).
	Settings string
	// Exceptions also records every thrown exception with its stack
	// (jdk.JavaExceptionThrow); costly when a service throws thousands a second.
	Exceptions bool
	// AsyncProfiler loads async-profiler into the JVM for the window
	// (collect --jvm): its CPU samples, with the VM's own, native and kernel
	// frames, and its allocation and lock samples take the place of JFR's;
	// JFR records the rest. When it cannot be loaded the collection goes on
	// with JFR alone, and the manifest's async-profiler item says why.
	AsyncProfiler bool
	// ProfilerLibrary is libasyncProfiler.so or the jar holding it; empty
	// means $PERFDOCTOR_ASYNC_PROFILER, else the cache FetchProfiler fills.
	ProfilerLibrary string
	// ProfilerEvent is async-profiler's CPU event: "cpu" (the default:
	// perf events, kernel frames included, when the kernel allows them)
	// or "itimer" (no kernel frames, cheaper for a service that switches
	// threads many times per request).
	ProfilerEvent string
	// Settle is the longest to wait, the recording started, for the JVM's
	// JIT compiler threads to go quiet before the window begins (settle.go:
	// a JVM's first JFR recording deoptimizes all its compiled code);
	// zero starts the window at once. The CLI passes DefaultSettle.
	Settle   time.Duration
	Roots    system.Roots // for the /proc snapshots; zero means the real ones
	Progress *progress.Line
	Logger   *slog.Logger
}

// Collect records the JVM for opt.Duration and writes a bundle to
// opt.OutDir, assembled in a sibling directory and renamed into place with
// its manifest last. When ctx is cancelled during the wait, the recording
// so far is dumped and written as a partial bundle.
func Collect(ctx context.Context, opt Options) (*bundle.Manifest, error) {
	if opt.PID <= 0 {
		return nil, fmt.Errorf("--jfr needs a process ID, got %d", opt.PID)
	}
	if opt.Duration < time.Second || opt.Duration > 10*time.Minute {
		return nil, fmt.Errorf("duration %s is outside 1s..10m", opt.Duration)
	}
	if opt.Settle < 0 || opt.Settle > MaxSettle {
		return nil, fmt.Errorf("JIT settle time %s is outside 0..%gm", opt.Settle, MaxSettle.Minutes())
	}
	if opt.Settings == "" {
		opt.Settings = "profile"
	}
	if opt.Settings != "profile" && opt.Settings != "default" {
		return nil, fmt.Errorf("JFR settings %q: want profile or default", opt.Settings)
	}
	switch opt.ProfilerEvent {
	case "":
		opt.ProfilerEvent = "cpu"
	case "cpu", "itimer":
	default:
		return nil, fmt.Errorf("async-profiler event %q: want cpu or itimer", opt.ProfilerEvent)
	}
	if opt.Logger == nil {
		opt.Logger = slog.New(slog.DiscardHandler)
	}
	if ents, err := os.ReadDir(opt.OutDir); err == nil && len(ents) > 0 {
		return nil, fmt.Errorf("output directory %s already exists and is not empty", opt.OutDir)
	}
	jcmd, jfrTool, err := tools(opt.Roots, opt.PID)
	if err != nil {
		return nil, err
	}
	if err := CheckJVM(opt.Roots, opt.PID); err != nil {
		return nil, err
	}
	w, err := bundle.Create(opt.OutDir)
	if err != nil {
		return nil, err
	}
	c := &collection{opt: opt, jcmd: jcmd, jfrTool: jfrTool, w: w, name: fmt.Sprintf("perfdoctor-%d", time.Now().UnixNano())}
	m, err := c.run(ctx)
	if err != nil {
		w.Abort()
		return nil, err
	}
	if err := w.Finish(m, opt.OutDir); err != nil {
		return m, err
	}
	opt.Logger.Info("bundle written", "dir", opt.OutDir, "partial", m.Partial)
	if ctx.Err() != nil {
		return m, fmt.Errorf("collection interrupted; partial bundle written to %s: %w", opt.OutDir, ctx.Err())
	}
	return m, nil
}

// tools finds jcmd and jfr, preferring the target's own JDK (attaching
// with another version's jcmd can fail), then PATH and JAVA_HOME.
func tools(roots system.Roots, pid int) (jcmd, jfrTool string, err error) {
	var dirs []string
	if exe, err := system.Executable(roots, pid); err == nil {
		dirs = append(dirs, filepath.Dir(exe))
	} else if errors.Is(err, fs.ErrNotExist) {
		return "", "", fmt.Errorf("process %d: no such process", pid)
	}
	if home := os.Getenv("JAVA_HOME"); home != "" {
		dirs = append(dirs, filepath.Join(home, "bin"))
	}
	find := func(name string) string {
		for _, d := range dirs {
			p := filepath.Join(d, name)
			if st, err := os.Stat(p); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
				return p
			}
		}
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
		return ""
	}
	if jcmd = find("jcmd"); jcmd == "" {
		return "", "", errors.New("the JDK's jcmd tool was not found (install a JDK 17 or later matching the target's, or set JAVA_HOME)")
	}
	if jfrTool = find("jfr"); jfrTool == "" {
		return "", "", jfr.ErrNoTool
	}
	return jcmd, jfrTool, nil
}

type collection struct {
	opt           Options
	jcmd, jfrTool string
	w             *bundle.Writer
	name          string
	cpuTime       bool // the recording has jdk.CPUTimeSample on
}

func (c *collection) run(ctx context.Context) (*bundle.Manifest, error) {
	opt := c.opt
	m := &bundle.Manifest{
		Tool:     version.Tool(),
		Target:   fmt.Sprintf("jvm pid %d", opt.PID),
		Start:    time.Now(),
		Duration: bundle.Duration(opt.Duration),
		PID:      opt.PID,
	}
	// The JVM writes the recording, so it needs an absolute path.
	recording, err := filepath.Abs(c.w.Path("recording.jfr"))
	if err != nil {
		return nil, err
	}
	defer os.Remove(recording)

	var ap *profiler
	if opt.AsyncProfiler {
		ap = c.startProfiler(ctx)
	}
	opt.Progress.Update("starting a JFR recording in process %d", opt.PID)
	args := []string{"JFR.start", "name=" + c.name, "settings=" + opt.Settings}
	// Both settings read threads' CPU and the context switch rate every
	// 10 s, which a recording of seconds would not see at all.
	args = append(args, "jdk.ThreadCPULoad#period=1s", "jdk.ThreadContextSwitchRate#period=1s")
	if opt.Exceptions {
		args = append(args, "+jdk.JavaExceptionThrow#enabled=true")
	}
	if ap != nil {
		args = append(args, profilerReplaces...)
	}
	cpuTimeInterval := executionInterval(opt.Settings)
	args = append(args, cpuTimeEvent+"#enabled=true", fmt.Sprintf("%s#throttle=%dms", cpuTimeEvent, cpuTimeInterval.Milliseconds()))
	reply, err := c.cmd(ctx, args...)
	if err == nil {
		// A JVM without the event warns that its settings do not exist
		// and records the rest.
		c.cpuTime = !strings.Contains(reply, cpuTimeEvent+"#")
	}
	if err != nil {
		stop, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if ctx.Err() != nil { // jcmd was stopped midway: the recording may have started
			c.cmd(stop, "JFR.stop", "name="+c.name)
		}
		if ap != nil {
			c.stopProfiler(stop, ap)
		}
		return nil, err // nothing recorded: no bundle
	}
	// The window begins once the JIT has recompiled what the recording's
	// start deoptimized; the /proc snapshots bound it, so the CPU per unit
	// of work is read over it too.
	c.settle(ctx)
	c.snapshot(bundle.SystemStartFile, "system-start")
	// The recording's own window: what it holds from before (a chunk
	// another recording began, a wait begun earlier, the settling) is not
	// read.
	start := time.Now()
	m.Start = start
	c.wait(ctx, start)
	window := jfr.Window{Since: start, Until: time.Now()}
	// The end snapshot closes the window before the profiler and the
	// recording stop: in the seconds after the window (stopping them, the
	// dump, the thread dump) the application settle.go measured went from
	// 16,100 to 6,900 requests/s with C2 back at 0.2-0.5 of a core, which
	// the CPU per unit of work must not count.
	c.snapshot(bundle.SystemEndFile, "system-end")

	// Dump and stop even when interrupted, on a context of their own, so
	// the JVM is not left recording and what was recorded is kept.
	fin, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var apErr error
	if ap != nil {
		opt.Progress.Update("stopping async-profiler")
		apErr = c.stopProfiler(fin, ap)
	}
	opt.Progress.Update("dumping the recording")
	_, dumpErr := c.cmd(fin, "JFR.dump", "name="+c.name, "filename="+recording,
		"begin="+instant(window.Since.Add(-time.Second)), "end="+instant(window.Until.Add(time.Second)))
	if _, err := c.cmd(fin, "JFR.stop", "name="+c.name); err != nil {
		opt.Logger.Warn("stopping the recording", "err", err)
	}
	m.End = time.Now()
	c.w.Written("recording", "", time.Since(start), dumpErr)
	var rec *jfr.Recording
	if dumpErr == nil {
		opt.Progress.Update("converting the recording")
		t0 := time.Now()
		var err error
		rec, err = jfr.ReadFileWindow(recording, window)
		c.w.Written("convert", "", time.Since(t0), err)
	}
	if ap != nil {
		c.useProfiler(rec, ap, apErr, window)
	}
	m.Samplers = c.samplers(fin, rec, ap, apErr, recording, dumpErr == nil)
	if rec != nil {
		c.threadDump(fin, rec.JVM)
		c.write(rec)
	}
	c.w.Complete(m)
	m.Partial = m.Partial || ctx.Err() != nil
	return m, nil
}

// threadDump asks the JVM for a thread dump, whose deadlock report JFR's
// 60-second jdk.ThreadDump would rarely catch in a short recording.
func (c *collection) threadDump(ctx context.Context, s *jfr.Summary) {
	out, err := c.cmd(ctx, "Thread.print")
	if err != nil {
		c.opt.Logger.Warn("thread dump", "err", err)
		return
	}
	s.ThreadDumps++
	if s.Deadlock == "" {
		s.Deadlock = jfr.DeadlockReport(out)
	}
}

func (c *collection) wait(ctx context.Context, start time.Time) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	deadline := time.NewTimer(c.opt.Duration)
	defer deadline.Stop()
	for {
		c.opt.Progress.Update("recording process %d with JFR: %s of %s", c.opt.PID, time.Since(start).Round(time.Second), c.opt.Duration)
		select {
		case <-ctx.Done():
			return
		case <-deadline.C:
			return
		case <-t.C:
		}
	}
}

// cmd runs jcmd against the target and returns its output. jcmd exits 0 on
// many failures, so the reply's first line is checked for them too.
func (c *collection) cmd(ctx context.Context, args ...string) (string, error) {
	cctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	out, err := exec.CommandContext(cctx, c.jcmd, append([]string{strconv.Itoa(c.opt.PID)}, args...)...).CombinedOutput()
	text := strings.TrimSpace(string(out))
	c.opt.Logger.Debug("jcmd", "args", args, "output", text)
	// The reply follows a "PID:" line; jcmd reports failures there.
	reply := text
	if first, rest, ok := strings.Cut(text, "\n"); ok && strings.HasSuffix(first, ":") {
		reply = rest
	}
	head, _, _ := strings.Cut(reply, "\n")
	if err == nil && !strings.Contains(head, "Exception") && !strings.Contains(head, "Could not") {
		return text, nil
	}
	if ctx.Err() != nil {
		return text, fmt.Errorf("jcmd %d %s: %w", c.opt.PID, args[0], ctx.Err())
	}
	msg := jcmdMessage(text)
	if msg == "" && err != nil {
		msg = err.Error()
	}
	return text, fmt.Errorf("jcmd %d %s: %s", c.opt.PID, args[0], msg)
}

// jcmdMessage is the line of jcmd's output that says what went wrong: the
// exception's message rather than the last frame of its stack trace; an
// attach failure says what the target must be.
func jcmdMessage(text string) string {
	var last string
	for _, l := range strings.Split(text, "\n") {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "at ") || strings.HasSuffix(l, ":") && !strings.Contains(l, " ") {
			continue
		}
		if name, msg, ok := strings.Cut(l, "Exception: "); ok {
			if strings.HasSuffix(name, "AttachNotSupported") {
				return msg + " (the target must be a HotSpot JVM, JDK 17 or later, run by this user)"
			}
			return msg
		}
		last = l
	}
	return last
}

// write files the converted recording: one profile per kind and the JVM
// summary with credentials redacted.
func (c *collection) write(rec *jfr.Recording) {
	for _, p := range []struct {
		name, file string
		p          *profile.Profile
	}{
		{"cpu", bundle.CPUFile, rec.CPU},
		{"allocs", bundle.AllocsFile, rec.Allocs},
		{"mutex", bundle.MutexFile, rec.Monitor},
		{"block", bundle.BlockFile, rec.Wait},
		{"exceptions", bundle.ExceptionsFile, rec.Exceptions},
	} {
		if p.p == nil {
			c.w.Skip(p.name, "no such events in the recording")
			continue
		}
		c.w.AddProfile(p.name, p.file, p.p, 0)
	}
	Redact(rec.JVM)
	c.w.AddJSON("jvm", bundle.JVMFile, rec.JVM, 0)
}

// Redact replaces credentials in a JVM summary's command lines, system
// properties and flags.
func Redact(s *jfr.Summary) {
	s.JVMArguments = redact.Args(strings.Fields(s.JVMArguments))
	s.JavaArguments = redact.Args(strings.Fields(s.JavaArguments))
	for k, v := range s.Properties {
		s.Properties[k] = redact.Property(k, v)
	}
	for i, f := range s.Flags {
		s.Flags[i].Value = redact.Property(f.Name, f.Value)
	}
}

func (c *collection) snapshot(file, name string) {
	t0 := time.Now()
	snap, err := system.Snapshot(c.opt.Roots, c.opt.PID)
	if err != nil {
		c.w.Written(name, file, time.Since(t0), err)
		return
	}
	c.w.AddJSON(name, file, snap, time.Since(t0))
}

// CheckJVM refuses a process that has not loaded a JVM: attaching sends
// the process SIGQUIT, which a JVM answers and most other programs (a Go
// service among them) die of.
func CheckJVM(roots system.Roots, pid int) error {
	proc := roots.Proc
	if proc == "" {
		proc = "/proc"
	}
	maps, err := os.ReadFile(filepath.Join(proc, strconv.Itoa(pid), "maps"))
	if err != nil {
		return fmt.Errorf("process %d: %w", pid, errors.Unwrap(err))
	}
	if !bytes.Contains(maps, []byte("/libjvm.so")) {
		return fmt.Errorf("process %d is not a JVM (no libjvm.so loaded); attaching would send it SIGQUIT", pid)
	}
	return nil
}
