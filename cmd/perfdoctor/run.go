package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/perfdoctor/perfdoctor/collect"
	"github.com/perfdoctor/perfdoctor/collect/jvm"
	"github.com/perfdoctor/perfdoctor/internal/progress"
	"github.com/perfdoctor/perfdoctor/underload"
)

func (a *app) runCommand() *cobra.Command {
	var (
		f              loadFlags
		jf             jfrFlags
		target, loadTo string
		perfPID        int
		dir            string
		warmup         time.Duration
		format         string
	)
	cmd := &cobra.Command{
		Use:   "run (--target PPROF_URL | --perf PID | --jvm PID | --jfr PID) (--load URL | --load-cmd CMD --units N)",
		Short: "Load a service, collect a bundle during steady load, and diagnose it",
		Long: `Run drives load at --load (the same options as perfdoctor load), waits out the
warm-up, then collects a bundle while the load continues for --duration, and
diagnoses it. The load results go into the bundle as load.json, so the
diagnosis knows the units of work served in the window, and into the report
next to the findings. The bundle and reports (report.txt, report.json,
report.html) are written to --output.

The target is observed as perfdoctor collect would: a Go service through its
/debug/pprof (--target), any local process through Linux perf (--perf PID), a
local JVM through async-profiler and JFR (--jvm PID) or JFR alone (--jfr PID).

For servers that speak neither HTTP nor UDP, --load-cmd runs the server's own
benchmark tool as the load (see perfdoctor load): --units is the units of work
one run of it does.`,
		Example: `  perfdoctor run --target http://127.0.0.1:6060 --load http://127.0.0.1:8080/api -c 16 -d 30s
  perfdoctor run --target http://127.0.0.1:6060 --load http://127.0.0.1:8080/ --rate 2000 -o ./run1
  perfdoctor run --perf 4242 --load http://127.0.0.1:8080/ -d 20s
  perfdoctor run --perf 4242 --load-cmd 'redis-benchmark -p 6379 -t set -n 100000 -q' --units 100000 --unit SET
  perfdoctor run --jvm 4242 --load http://127.0.0.1:8080/ -d 20s`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			targets := 0
			for _, set := range []bool{target != "", perfPID != 0, jf.pid != 0, jf.jvm != 0} {
				if set {
					targets++
				}
			}
			if targets != 1 {
				return usageError{errors.New("run needs one target: --target PPROF_URL, --perf PID, --jvm PID or --jfr PID")}
			}
			// --load is the URL to load, or beside --load-cmd the target's
			// address for the command's {host} and {port}.
			if loadTo == "" && f.loadCmd == "" {
				return usageError{errors.New("run needs one load: --load URL, or --load-cmd CMD --units N")}
			}
			if warmup < 0 || warmup > 10*time.Minute {
				return usageError{fmt.Errorf("--warmup %s out of range 0..10m", warmup)}
			}
			if _, ok := map[string]bool{"text": true, "json": true, "markdown": true, "html": true}[format]; !ok {
				return usageError{fmt.Errorf("--format %q: want text, json, markdown or html", format)}
			}
			cfgs, restore, err := f.configure(cmd, loadTo)
			if err != nil {
				return err
			}
			defer restore()
			o := underload.Options{PprofURL: target, Load: cfgs[0], Warmup: warmup,
				Progress: progress.New(os.Stderr), Logger: a.log, Messages: a.stderr}
			name := target
			switch {
			case perfPID != 0:
				o.Target, name = fmt.Sprintf("pid %d through perf", perfPID), fmt.Sprintf("pid%d", perfPID)
				o.Collect = underload.Perf(perfPID, a.tool(), o.Progress, a.log)
			case jf.pid != 0 || jf.jvm != 0:
				c, err := a.collectJVM(jf, o.Progress)
				if err != nil {
					return err
				}
				pid := max(jf.pid, jf.jvm)
				o.Target, name, o.Collect = fmt.Sprintf("JVM pid %d", pid), fmt.Sprintf("jvm%d", pid), c
				o.Lead = jf.settle
			}
			if dir == "" {
				dir = collect.DefaultBundleName(name, time.Now()) + "-run"
			}
			return a.profileUnderLoad(cmd.Context(), o, dir, format)
		},
	}
	f.register(cmd, 30*time.Second)
	jf.register(cmd)
	cmd.Flags().StringVar(&target, "target", "", "a Go service's pprof URL (http://host:port or .../debug/pprof/)")
	cmd.Flags().IntVar(&perfPID, "perf", 0, "observe this local process (any language) through Linux perf instead of pprof")
	cmd.Flags().StringVar(&loadTo, "load", "", "URL to load (http://, https:// or udp://), or with --load-cmd the target's tcp://host:port for {port} in it")
	cmd.Flags().DurationVar(&warmup, "warmup", 5*time.Second, "load before collecting starts")
	cmd.Flags().StringVarP(&dir, "output", "o", "", "directory for the bundle and reports (default perfdoctor-HOST-TIME-run)")
	cmd.Flags().StringVar(&format, "format", "text", "report on stdout: text, json, markdown or html")
	return cmd
}

// collectJVM collects a JVM through async-profiler and JFR (--jvm) or JFR
// alone (--jfr) into a bundle, as collect does.
func (a *app) collectJVM(f jfrFlags, line *progress.Line) (underload.Collector, error) {
	if f.pid != 0 && f.jvm != 0 {
		return nil, usageError{errors.New("--jfr and --jvm both record a JVM: give one")}
	}
	if f.jvm == 0 && (f.library != "" || f.event != "cpu") {
		return nil, usageError{errors.New("--async-profiler and --jvm-event go with --jvm")}
	}
	if err := f.checkSettle(); err != nil {
		return nil, err
	}
	return underload.JVM(jvm.Options{
		PID: max(f.pid, f.jvm), Settings: f.settings, Exceptions: f.exceptions,
		AsyncProfiler: f.jvm != 0, ProfilerLibrary: f.library, ProfilerEvent: f.event,
		Settle: f.settle, Progress: line, Logger: a.log,
	}), nil
}

// profileUnderLoad collects a bundle into dir/bundle under o's load,
// diagnoses it and writes the reports.
func (a *app) profileUnderLoad(ctx context.Context, o underload.Options, dir, format string) error {
	res, err := underload.Diagnose(ctx, o, a.diagnoseRequest(), dir, format, a.stdout)
	if err != nil {
		return err
	}
	if res.Load.Interrupted {
		return errInterrupted
	}
	return nil
}
