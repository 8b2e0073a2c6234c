package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/perfdoctor/perfdoctor/collect"
	"github.com/perfdoctor/perfdoctor/diagnose"
	"github.com/perfdoctor/perfdoctor/internal/progress"
	"github.com/perfdoctor/perfdoctor/report"
	"github.com/perfdoctor/perfdoctor/report/loadtext"
	"github.com/perfdoctor/perfdoctor/report/verifyreport"
	"github.com/perfdoctor/perfdoctor/try"
	"github.com/perfdoctor/perfdoctor/verify"
)

func (a *app) tryCommand() *cobra.Command {
	var (
		f                             loadFlags
		command, url, target, repPath string
		dir, format                   string
		only                          []string
		rounds                        int
		warmup, collectFor, ready     time.Duration
		minChange                     float64
	)
	cmd := &cobra.Command{
		Use:   "try --cmd COMMAND --url URL (--target PPROF_URL | --report report.json)",
		Short: "Prove configuration-only fixes (GOGC, GOMEMLIMIT, GOMAXPROCS, GODEBUG, JVM options) on the service itself",
		Long: `Try closes the loop for prescriptions that need no code change. It starts the
service with --cmd (sh -c, its own process group), diagnoses it under the load
(collecting from --target for --collect, as perfdoctor run does) or reads the
findings of --report, and for each finding whose fix is settings alone runs the
same load on the current configuration and on the prescribed one in
alternating rounds, as perfdoctor verify does. Each measurement starts a fresh
process (the two configurations share the command and its port), with the
prescribed environment variables set, or JVM options added to
JAVA_TOOL_OPTIONS. It reports the measured CPU per request, throughput and
p99 against the finding's predicted gain, with 95% intervals, and each
configuration's peak RSS: the memory the change costs.

With -o DIR it writes the bundle, report.json (each tried finding carries
"tried") and, per configuration, verify.json, verify.md and verify.html.`,
		Example: `  perfdoctor try --cmd './svc -listen 127.0.0.1:8080 -pprof 127.0.0.1:6060' \
    --url http://127.0.0.1:8080/ --target http://127.0.0.1:6060 -o try1
  perfdoctor try --cmd './svc' --url http://127.0.0.1:8080/ --report report.json --only GC001 --rounds 6`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if command == "" || url == "" {
				return usageError{errors.New("try needs --cmd COMMAND and --url URL")}
			}
			if (target == "") == (repPath == "") {
				return usageError{errors.New("try needs either --target PPROF_URL (diagnose first) or --report FILE (findings already made)")}
			}
			if rounds < 2 || rounds > 100 {
				return usageError{fmt.Errorf("--rounds %d out of range 2..100 (one round has no confidence interval)", rounds)}
			}
			if format != "text" && format != "json" {
				return usageError{fmt.Errorf("--format %q: want text or json", format)}
			}
			cfgs, restore, err := f.configure(cmd, url)
			if err != nil {
				return err
			}
			defer restore()
			if dir == "" {
				dir = collect.DefaultBundleName(url, time.Now()) + "-try"
			}
			o := try.Options{Command: command, Load: cfgs[0], Rounds: rounds, Warmup: warmup, ReadyTimeout: ready, MinChange: minChange,
				PprofURL: target, BundleDir: filepath.Join(dir, "bundle"), Collect: collectFor, Only: only,
				Diagnose: func(b string) (*report.Report, error) { return diagnose.Run(cmd.Context(), a.diagnoseRequest(b)) },
				Log:      a.log, Messages: a.stderr, Progress: progress.New(os.Stderr),
				OnRound: func(id string, done, of int, r verify.Round) {
					fmt.Fprintf(a.stderr, "%s %s\n", id, loadtext.RoundLine(done, of, r))
				},
			}
			if a.verbose {
				o.Echo = a.stderr
			}
			if repPath != "" {
				if o.Report, err = report.ReadJSON(repPath); err != nil {
					return fmt.Errorf("--report: %w", err)
				}
			}
			res, runErr := try.Run(cmd.Context(), o)
			if res == nil {
				return runErr
			}
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return fmt.Errorf("output: %w", err)
			}
			if err := report.Save(nil, filepath.Join(dir, "report.json"), "json", res.Report); err != nil {
				return err
			}
			for i, out := range res.Outcomes {
				sub := filepath.Join(dir, fmt.Sprintf("try-%d-%s", i+1, strings.ReplaceAll(out.Findings[0], "#", "-")))
				if _, err := verifyreport.Save(sub, out.Verify, "perfdoctor try "+out.Trial.Config+" ("+strings.Join(out.Findings, ", ")+")"); err != nil {
					return err
				}
			}
			if format == "json" {
				if err := report.Write(a.stdout, "json", res.Report); err != nil {
					return err
				}
			} else {
				res.WriteText(a.stdout)
			}
			fmt.Fprintf(a.stderr, "perfdoctor: results in %s\n", dir)
			if runErr != nil && cmd.Context().Err() != nil {
				return errInterrupted
			}
			return runErr
		},
	}
	f.register(cmd, 5*time.Second)
	fl := cmd.Flags()
	fl.StringVar(&command, "cmd", "", "command that starts the service (run with sh -c; started anew for each measurement)")
	fl.StringVar(&url, "url", "", "URL to load; the service must answer there")
	fl.StringVar(&target, "target", "", "the service's pprof URL, to diagnose it first")
	fl.StringVar(&repPath, "report", "", "a JSON report (diagnose --format json) whose findings to try, instead of diagnosing")
	fl.StringSliceVar(&only, "only", nil, "try only these findings (IDs or rule IDs, comma-separated)")
	fl.IntVar(&rounds, "rounds", 5, "rounds; each measures both configurations once")
	fl.DurationVar(&warmup, "warmup", 2*time.Second, "load before each measurement (and before collecting), not counted")
	fl.DurationVar(&collectFor, "collect", 10*time.Second, "collection window of the diagnosis")
	fl.DurationVar(&ready, "ready-timeout", 30*time.Second, "how long the started service may take to accept connections")
	fl.Float64Var(&minChange, "min-change", 0, "ignore significant changes smaller than this fraction (e.g. 0.03)")
	fl.StringVarP(&dir, "output", "o", "", "directory for the bundle, report.json and the trials (default perfdoctor-HOST-TIME-try)")
	fl.StringVar(&format, "format", "text", "output: text, or json (the report, findings carrying \"tried\")")
	return cmd
}
