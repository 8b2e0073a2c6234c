package main

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/perfdoctor/perfdoctor/collect"
	"github.com/perfdoctor/perfdoctor/internal/progress"
)

func (a *app) collectCommand() *cobra.Command {
	var (
		duration   time.Duration
		out        string
		trace      time.Duration
		heapEvery  time.Duration
		tokenFile  string
		withPerf   bool
		noChildren bool
		jfr        jfrFlags
	)
	cmd := &cobra.Command{
		Use:   "collect URL | --jvm PID | --jfr PID | --perf PID",
		Short: "Observe a live Go service through its /debug/pprof endpoint into a bundle",
		Long: `Collect takes, concurrently and each with a timeout and size cap: a CPU profile
for the duration, mutex and block profiles over the same window, heap profiles
at start and end, allocs and goroutine profiles, a short execution trace, and
runtime statistics at start and end. When the target runs on this host it also
snapshots the process, its cgroup and the host's CPU and network state from
/proc at both ends, and with --perf records its kernel and user stacks through
Linux perf. The bundle is a plain directory; go tool pprof reads its files.

With --jfr PID it records a local JVM with Java Flight Recorder instead (jcmd
JFR.start, wait, JFR.dump, decoded by perfdoctor): CPU samples,
allocations, monitor contention and exceptions as profiles, and the JVM's
configuration, collector pauses and exception counts in jvm.json, with
credentials in its command line and properties redacted.

With --jvm PID it also loads async-profiler into the JVM (jcmd
JVMTI.agent_load, no restart) for the window: its CPU samples hold the VM's
own frames (an exception's stack walk, GC, compilation), native and kernel
frames, where JFR's hold Java frames only; its allocation and lock samples
replace JFR's, and JFR records the rest. When the JVM refuses the agent, it
records with JFR alone and says why.

With --perf PID it records any local process, a native one included, through
Linux perf: stacks with kernel frames and source lines (for binaries built with
-g), which diagnose reads as the CPU profile, and the process and host
snapshots. The process's descendants are recorded and snapshotted with it (a
database's backends, a web server's workers, children forked in the window),
each sample labelled with its pid and command, and a line says where the tree's
CPU went; --no-children narrows it to the process.`,
		Example: `  perfdoctor collect http://127.0.0.1:6060 -d 30s -o ./b1
  perfdoctor collect http://127.0.0.1:6060/debug/pprof/ -d 10s
  perfdoctor collect --jvm 4242 -d 20s -o ./jvm1
  perfdoctor collect --jfr 4242 -d 20s -o ./jvm1
  perfdoctor collect --perf 4242 -d 20s -o ./native1`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if jfr.pid != 0 || jfr.jvm != 0 {
				return a.collectJFR(cmd, args, jfr, duration, out)
			}
			if pid, err := strconv.Atoi(firstArg(args)); withPerf && err == nil {
				dir, win, err := collect.ObserveNative(cmd.Context(), collect.WindowOptions{PID: pid, Duration: duration, NoChildren: noChildren,
					Progress: progress.New(os.Stderr), Logger: a.log}, out, a.tool()+" sys")
				if err == nil {
					what := "pid %d and its descendants"
					if noChildren {
						what = "pid %d"
					}
					fmt.Fprintf(a.stderr, "bundle written to %s: perf stacks and /proc snapshots of "+what+"\n", dir, pid)
				}
				if win != nil && win.Tree != nil {
					fmt.Fprintln(a.stderr, win.Tree.Sentence())
				}
				return err
			}
			if noChildren {
				return usageError{errors.New("--no-children goes with --perf PID")}
			}
			if err := exactArgs(1)(cmd, args); err != nil {
				return err
			}
			if out == "" {
				out = collect.DefaultBundleName(args[0], time.Now())
			}
			token, err := collect.ReadToken(tokenFile)
			if err != nil {
				return err
			}
			line := progress.New(os.Stderr)
			m, err := collect.Collect(cmd.Context(), collect.Options{
				Token:         token,
				Target:        args[0],
				Duration:      duration,
				TraceDuration: trace,
				HeapEvery:     heapEvery,
				Perf:          withPerf,
				OutDir:        out,
				Progress:      line,
				Logger:        a.log,
			})
			line.Clear()
			if m != nil {
				fmt.Fprint(a.stderr, m.Summary(out))
			}
			return err
		},
	}
	cmd.Flags().DurationVarP(&duration, "duration", "d", 30*time.Second, "CPU profile length, 1s to 10m")
	cmd.Flags().StringVar(&tokenFile, "token-file", "", "file holding the bearer token an agent requires (or set $"+collect.TokenEnv+"); never on the command line, where ps shows it")
	cmd.Flags().StringVarP(&out, "output", "o", "", "bundle directory to create (default perfdoctor-HOST-TIME)")
	cmd.Flags().DurationVar(&trace, "trace", time.Second, "execution trace length (0 to skip)")
	jfr.register(cmd)
	cmd.Flags().DurationVar(&heapEvery, "heap-every", 0, "also take a heap profile every D during the window (heap-1.pb.gz, heap-2.pb.gz, ...), so memory growth shows its shape")
	cmd.Flags().BoolVar(&withPerf, "perf", false, "record stacks with kernel frames through Linux perf (perf.pb.gz): for a local URL target besides its profiles, or for a PID alone")
	cmd.Flags().BoolVar(&noChildren, "no-children", false, "with --perf PID, observe the process alone (by default its children and their children are recorded and snapshotted with it)")
	return cmd
}

func firstArg(args []string) string {
	if len(args) == 0 {
		return ""
	}
	return args[0]
}
