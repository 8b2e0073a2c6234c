package main

import (
	"fmt"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/perfdoctor/perfdoctor/bundle"
	"github.com/perfdoctor/perfdoctor/collect"
	"github.com/perfdoctor/perfdoctor/internal/progress"
)

func (a *app) collectCommand() *cobra.Command {
	var (
		duration  time.Duration
		out       string
		trace     time.Duration
		heapEvery time.Duration
		tokenFile string
		withPerf  bool
		jfr       jfrFlags
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
snapshots.`,
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
				return a.collectNative(cmd, pid, duration, out)
			}
			if err := exactArgs(1)(cmd, args); err != nil {
				return err
			}
			if out == "" {
				out = defaultBundleName(args[0], time.Now())
			}
			token, err := readToken(tokenFile)
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
				printCollected(a, out, m)
			}
			return err
		},
	}
	cmd.Flags().DurationVarP(&duration, "duration", "d", 30*time.Second, "CPU profile length, 1s to 10m")
	cmd.Flags().StringVar(&tokenFile, "token-file", "", "file holding the bearer token an agent requires (or set $"+tokenEnv+"); never on the command line, where ps shows it")
	cmd.Flags().StringVarP(&out, "output", "o", "", "bundle directory to create (default perfdoctor-HOST-TIME)")
	cmd.Flags().DurationVar(&trace, "trace", time.Second, "execution trace length (0 to skip)")
	jfr.register(cmd)
	cmd.Flags().DurationVar(&heapEvery, "heap-every", 0, "also take a heap profile every D during the window (heap-1.pb.gz, heap-2.pb.gz, ...), so memory growth shows its shape")
	cmd.Flags().BoolVar(&withPerf, "perf", false, "record stacks with kernel frames through Linux perf (perf.pb.gz): for a local URL target besides its profiles, or for a PID alone")
	return cmd
}

func printCollected(a *app, dir string, m *bundle.Manifest) {
	ok := 0
	for _, it := range m.Items {
		if it.Status == bundle.StatusOK {
			ok++
		}
	}
	state := "bundle"
	if m.Partial {
		state = "partial bundle"
	}
	fmt.Fprintf(a.stderr, "%s written to %s: %d of %d items collected\n", state, dir, ok, len(m.Items))
	for _, it := range m.Failed() {
		fmt.Fprintf(a.stderr, "  %s failed: %s\n", it.Name, it.Error)
	}
}

// defaultBundleName makes a directory name from the target host and time.
func defaultBundleName(target string, now time.Time) string {
	host := "target"
	if u, err := url.Parse(target); err == nil && u.Host != "" {
		host = strings.NewReplacer(":", "-", "[", "", "]", "").Replace(u.Host)
	}
	return fmt.Sprintf("perfdoctor-%s-%s", host, now.Format("20060102-150405"))
}

// tokenEnv names the environment variable holding an agent's bearer token.
const tokenEnv = "PERFDOCTOR_TOKEN"

// readToken returns the agent token from the file, else from $PERFDOCTOR_TOKEN.
func readToken(file string) (string, error) {
	if file == "" {
		return os.Getenv(tokenEnv), nil
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return "", fmt.Errorf("token: %w", err)
	}
	tok := strings.TrimSpace(string(b))
	if tok == "" || strings.ContainsAny(tok, "\r\n") {
		return "", fmt.Errorf("token: %s must hold one non-empty line", file)
	}
	return tok, nil
}

func firstArg(args []string) string {
	if len(args) == 0 {
		return ""
	}
	return args[0]
}

// collectNative records a local process of any language with perf, with
// source lines, and the /proc snapshots around the window, as a bundle.
func (a *app) collectNative(cmd *cobra.Command, pid int, duration time.Duration, out string) error {
	if pid <= 0 {
		return fmt.Errorf("--perf: PID %d is not a process", pid)
	}
	if duration < collect.MinDuration || duration > collect.MaxDuration {
		return fmt.Errorf("duration %s out of range (%s to %s)", duration, collect.MinDuration, collect.MaxDuration)
	}
	if out == "" {
		out = fmt.Sprintf("perfdoctor-pid%d-%s", pid, time.Now().Format("20060102-150405"))
	}
	if err := bundle.CheckDestination(out); err != nil {
		return err
	}
	line := progress.New(os.Stderr)
	win, err := collect.ObserveWindow(cmd.Context(), collect.WindowOptions{PID: pid, Duration: duration, Perf: true, SourceLines: true, Progress: line, Logger: a.log})
	line.Clear()
	if err != nil {
		return err
	}
	if err := win.WriteBundle(out, "perfdoctor "+version+" sys"); err != nil {
		return err
	}
	if win.PerfErr != nil {
		return fmt.Errorf("bundle written to %s without stacks: %w", out, win.PerfErr)
	}
	fmt.Fprintf(a.stderr, "bundle written to %s: perf stacks and /proc snapshots of pid %d\n", out, pid)
	return nil
}
