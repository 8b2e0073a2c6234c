package main

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/perfdoctor/perfdoctor/collect/jvm"
	"github.com/perfdoctor/perfdoctor/internal/progress"
)

// jfrFlags are collect's options for JVM targets.
type jfrFlags struct {
	pid        int
	jvm        int // --jvm: async-profiler and JFR
	library    string
	event      string
	settings   string
	exceptions bool
	settle     time.Duration
}

func (f *jfrFlags) register(cmd *cobra.Command) {
	cmd.Flags().IntVar(&f.pid, "jfr", 0, "record the JVM with this process ID with Java Flight Recorder (jcmd) instead of fetching pprof from a URL")
	cmd.Flags().IntVar(&f.jvm, "jvm", 0, "record the JVM with this process ID with async-profiler (CPU with the VM's own, native and kernel frames; allocations; locks) and JFR (the rest), no restart; JFR alone, said so, when the agent cannot be loaded")
	cmd.Flags().StringVar(&f.library, "async-profiler", "", "with --jvm, async-profiler's libasyncProfiler.so or its Maven jar (default $"+jvm.ProfilerEnv+", else the cache `perfdoctor fetch-async-profiler` fills)")
	cmd.Flags().StringVar(&f.event, "jvm-event", "cpu", "with --jvm, async-profiler's CPU event: cpu (perf events, with kernel frames) or itimer (no kernel frames, cheaper where threads switch often)")
	cmd.Flags().StringVar(&f.settings, "jfr-settings", "profile", "JFR settings for --jfr: profile or default")
	cmd.Flags().BoolVar(&f.exceptions, "jfr-exceptions", false, "with --jfr, also record every thrown exception with its stack (costly at high throw rates)")
	cmd.Flags().DurationVar(&f.settle, "jit-settle", jvm.DefaultSettle, "with --jfr or --jvm, wait at most this long after the recording starts for the JVM's JIT compiler to go quiet before the window begins (a JVM's first JFR recording deoptimizes its compiled code); 0 begins at once")
}

// checkSettle refuses a --jit-settle outside 0..jvm.MaxSettle.
func (f *jfrFlags) checkSettle() error { return checkJITSettle(f.settle) }

// checkJITSettle refuses a --jit-settle (collect, run, verify, gate)
// outside 0..jvm.MaxSettle.
func checkJITSettle(d time.Duration) error {
	if d < 0 || d > jvm.MaxSettle {
		return usageError{fmt.Errorf("--jit-settle %s out of range 0..%gm", d, jvm.MaxSettle.Minutes())}
	}
	return nil
}

// collectJFR writes a bundle from a JFR recording of a local JVM.
func (a *app) collectJFR(cmd *cobra.Command, args []string, f jfrFlags, duration time.Duration, out string) error {
	if f.pid != 0 && f.jvm != 0 {
		return usageError{errors.New("--jfr and --jvm both record a JVM: give one")}
	}
	flag := "--jfr"
	if f.jvm != 0 {
		f.pid, flag = f.jvm, "--jvm"
	} else if f.library != "" || f.event != "cpu" {
		return usageError{errors.New("--async-profiler and --jvm-event go with --jvm")}
	}
	if len(args) > 0 {
		return usageError{fmt.Errorf("%s takes a process ID, not a URL", flag)}
	}
	if err := f.checkSettle(); err != nil {
		return err
	}
	if out == "" {
		out = fmt.Sprintf("perfdoctor-jvm-%d-%s", f.pid, time.Now().Format("20060102-150405"))
	}
	line := progress.New(os.Stderr)
	m, err := jvm.Collect(cmd.Context(), jvm.Options{
		PID: f.pid, Duration: duration, OutDir: out, Settings: f.settings, Exceptions: f.exceptions,
		AsyncProfiler: f.jvm != 0, ProfilerLibrary: f.library, ProfilerEvent: f.event,
		Settle: f.settle, Progress: line, Logger: a.log,
	})
	line.Clear()
	if m != nil {
		fmt.Fprint(a.stderr, m.Summary(out))
	}
	return err
}
