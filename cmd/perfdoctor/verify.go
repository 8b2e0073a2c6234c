package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/perfdoctor/perfdoctor/collect/jvm"
	"github.com/perfdoctor/perfdoctor/internal/progress"
	"github.com/perfdoctor/perfdoctor/load"
	"github.com/perfdoctor/perfdoctor/report/loadtext"
	"github.com/perfdoctor/perfdoctor/report/verifyreport"
	"github.com/perfdoctor/perfdoctor/verify"
)

// regressionError carries exitRegression without printing more.
type regressionError struct{ msg string }

func (e regressionError) Error() string { return e.msg }

func (a *app) verifyCommand() *cobra.Command {
	var (
		f                    loadFlags
		before, after        string
		beforeCmd, afterCmd  string
		rounds               int
		warmup, readyTimeout time.Duration
		settle               time.Duration
		minChange            float64
		format, out          string
	)
	cmd := &cobra.Command{
		Use:   "verify --before URL --after URL",
		Short: "Compare two versions of a service under the same load, with confidence intervals",
		Long: `Verify loads the before and after targets the same way, alternating them over
several rounds (before/after, then after/before, ...) so slow drift of the
machine cancels, and reports the after/before ratios of throughput and latency
(p50, p99) with 95% confidence intervals from a paired t-test on the per-round
log ratios. The verdict is faster, slower or no significant change; the exit
code is 4 on a significant regression (lower throughput or higher p99), for CI.

The targets are running services, or --before-cmd/--after-cmd start them: each
command runs under sh -c in its own process group, verify waits until its URL
accepts connections, and stops exactly the processes it started (SIGTERM to
the group, SIGKILL after 5s) when done or interrupted.

For servers that speak neither HTTP nor UDP, --load-cmd loads each side with
the server's own benchmark tool (see perfdoctor load): give the targets as
tcp://host:port and write {port} (or {host}, {addr}) in the command; the
verdict is then throughput's, with CPU per unit for local targets.

A side whose process listens on this host and is a JVM (it has loaded
libjvm.so) is first loaded until its JIT compiler threads go quiet, for
--jit-settle at most, as perfdoctor run waits before its window: a JVM
compiles its hot code for tens of seconds under load, and rounds measured
meanwhile favour the side that happens to be further along. The wait per
side is in the results (jit_settle). Other sides do not wait.

--out DIR keeps the proof for a pull request: verify.json (rounds, intervals,
verdict; docs/verify.md), verify.md (tables and Mermaid charts) and
verify.html (one offline page, per-round charts in SVG).`,
		Example: `  perfdoctor verify --before http://127.0.0.1:8080/ --after http://127.0.0.1:8081/
  perfdoctor verify --rounds 6 -d 5s \
    --before-cmd './old -listen 127.0.0.1:9001' --before http://127.0.0.1:9001/ \
    --after-cmd  './new -listen 127.0.0.1:9002' --after  http://127.0.0.1:9002/ --out proof
  perfdoctor verify --before tcp://127.0.0.1:6379 --after tcp://127.0.0.1:6380 -d 10s \
    --load-cmd 'redis-benchmark -p {port} -t set -n 200000 -q' --units 200000 --unit SET`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if before == "" || after == "" {
				return usageError{errors.New("verify needs --before URL and --after URL")}
			}
			if before == after {
				return usageError{errors.New("--before and --after are the same URL; give each version its own address")}
			}
			if rounds < 2 || rounds > 100 {
				return usageError{fmt.Errorf("--rounds %d out of range 2..100 (one round has no confidence interval)", rounds)}
			}
			if warmup < 0 || warmup > load.MaxDuration {
				return usageError{fmt.Errorf("--warmup %s out of range", warmup)}
			}
			if err := checkJITSettle(settle); err != nil {
				return err
			}
			if format != "text" && !slices.Contains(verifyreport.Formats, format) {
				return usageError{fmt.Errorf("--format %q: want text, json, markdown or html", format)}
			}
			cfgs, restore, err := f.configure(cmd, before, after)
			if err != nil {
				return err
			}
			defer restore()
			ctx := cmd.Context()
			var echo io.Writer
			if a.verbose {
				echo = a.stderr
			}
			for _, s := range []struct{ name, command, url string }{{"before", beforeCmd, before}, {"after", afterCmd, after}} {
				if s.command == "" {
					continue
				}
				p, err := verify.StartTarget(ctx, s.name, s.command, s.url, readyTimeout, echo, a.log)
				if err != nil {
					return err
				}
				defer p.Stop()
			}
			v, err := verify.Run(ctx, verify.Options{Before: cfgs[0], After: cfgs[1],
				PIDs:   [2]int{verify.LocalPID(before), verify.LocalPID(after)},
				Rounds: rounds, Warmup: warmup, MinChange: minChange,
				Settle: settle, Progress: progress.New(os.Stderr),
				OnRound: func(done, of int, r verify.Round) { fmt.Fprintln(a.stderr, loadtext.RoundLine(done, of, r)) },
			})
			if err != nil {
				return err
			}
			title := "perfdoctor verify: " + after + " against " + before
			if format == "text" {
				loadtext.WriteVerify(a.stdout, v)
			} else if err := verifyreport.Write(a.stdout, format, v, title); err != nil {
				return err
			}
			if out != "" {
				paths, err := verifyreport.Save(out, v, title)
				if err != nil {
					return err
				}
				fmt.Fprintf(a.stderr, "perfdoctor: verify results in %s\n", strings.Join(paths, ", "))
			}
			if ctx.Err() != nil {
				return errInterrupted
			}
			if v.Verdict == verify.Slower {
				return regressionError{"significant regression: " + v.Why}
			}
			return nil
		},
	}
	f.register(cmd, 5*time.Second)
	cmd.Flags().StringVar(&before, "before", "", "URL of the version before the change")
	cmd.Flags().StringVar(&after, "after", "", "URL of the version after the change")
	cmd.Flags().StringVar(&beforeCmd, "before-cmd", "", "command that starts the before version (run with sh -c)")
	cmd.Flags().StringVar(&afterCmd, "after-cmd", "", "command that starts the after version (run with sh -c)")
	cmd.Flags().IntVar(&rounds, "rounds", 5, "rounds; each measures both versions once")
	cmd.Flags().DurationVar(&warmup, "warmup", time.Second, "load before each measurement, not counted")
	cmd.Flags().DurationVar(&settle, "jit-settle", jvm.DefaultSettle, "for a side that is a local JVM, load it at most this long before the first round until its JIT compiler goes quiet; 0 does not wait")
	cmd.Flags().DurationVar(&readyTimeout, "ready-timeout", 30*time.Second, "how long a started command may take to accept connections")
	cmd.Flags().Float64Var(&minChange, "min-change", 0, "ignore significant changes smaller than this fraction (e.g. 0.03)")
	cmd.Flags().StringVar(&format, "format", "text", "output: text, json, markdown or html")
	cmd.Flags().StringVar(&out, "out", "", "also write verify.json, verify.md and verify.html into this directory")
	return cmd
}
