package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/perfdoctor/perfdoctor/collect/jvm"
	"github.com/perfdoctor/perfdoctor/diagnose"
	"github.com/perfdoctor/perfdoctor/gate"
	"github.com/perfdoctor/perfdoctor/internal/progress"
	"github.com/perfdoctor/perfdoctor/internal/supervise"
	"github.com/perfdoctor/perfdoctor/load"
	"github.com/perfdoctor/perfdoctor/report"
	"github.com/perfdoctor/perfdoctor/report/loadtext"
	"github.com/perfdoctor/perfdoctor/report/verifyreport"
	"github.com/perfdoctor/perfdoctor/underload"
	"github.com/perfdoctor/perfdoctor/verify"
)

// gateFlags are gate's settings beyond the load's.
type gateFlags struct {
	base, head               string // service URLs
	baseCmd, headCmd         string
	basePprof, headPprof     string
	baseBench, headBench     string
	baseProfile, headProfile []string
	judge                    string
	threshold                float64
	rounds                   int
	warmup, ready, window    time.Duration
	settle                   time.Duration // JVM builds' JIT settle bound (verify.Options.Settle)
	out                      string
	together, fresh          bool
}

func (a *app) gateCommand() *cobra.Command {
	var (
		f loadFlags
		g gateFlags
	)
	cmd := &cobra.Command{
		Use:   "gate (--base URL --head URL | --base-bench FILE --head-bench FILE)",
		Short: "Pull-request gate: fail when the head build is slower than the base with confidence",
		Long: `Gate compares a base and a head build for a CI job, and exits with code 4 when
the head is worse by more than --threshold with 95% confidence.

On running services (--base/--head, started by --base-cmd/--head-cmd when
given) it runs verify's paired rounds, alternating the order, and judges the
CPU time per request read from /proc (--judge cpu, the default: both builds
must run on this host) or throughput and p99 latency (--judge load). With
--base-pprof/--head-pprof it then profiles each build under the same load,
diagnoses both and diffs their CPU profiles. On a shared machine, measured
best (docs/ci.md): --fresh (each build started anew every round) --together
(both loaded at once) --rate R, with both commands pinned to the same CPUs
(taskset -c 1 ...).

On benchmarks (--base-bench/--head-bench: go test -bench output with -count
6 or more) it judges each benchmark's ns/op; --base-profile/--head-profile
(go test -cpuprofile) give the diff and the findings.

It prints the pull request's comment (Markdown: verdict, figures with
intervals, the functions that got hotter, new or grown findings) and writes
into --out: gate.md, gate.json, diff.html (the differential flame graph),
verify's proof in service mode, and each side's bundle and reports.
docs/ci.md has the statistics and the measured false-alarm and detection
rates.`,
		Example: `  perfdoctor gate --rounds 6 -d 3s \
    --base-cmd './svc-base -listen 127.0.0.1:9001' --base http://127.0.0.1:9001/ --base-pprof http://127.0.0.1:9001 \
    --head-cmd './svc-head -listen 127.0.0.1:9002' --head http://127.0.0.1:9002/ --head-pprof http://127.0.0.1:9002 \
    --out gate > comment.md
  perfdoctor gate --base-bench base.txt --base-profile base.pprof --head-bench head.txt --head-profile head.pprof`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			service, bench := g.base != "" || g.head != "", g.baseBench != "" || g.headBench != ""
			switch {
			case service == bench:
				return usageError{errors.New("gate needs --base URL --head URL (services) or --base-bench FILE --head-bench FILE (benchmarks)")}
			case g.threshold < 0 || g.threshold >= 1:
				return usageError{fmt.Errorf("--threshold %g out of range 0..1 (a fraction: 0.02 is 2%%)", g.threshold)}
			case g.out == "":
				return usageError{errors.New("--out DIR is required")}
			}
			var res *gate.Result
			var err error
			if service {
				res, err = a.gateService(cmd, &f, &g)
			} else {
				res, err = a.gateBenchmarks(cmd.Context(), &g)
			}
			if err != nil {
				return err
			}
			if err := res.Save(g.out); err != nil {
				return err
			}
			if err := res.WriteMarkdown(a.stdout); err != nil {
				return err
			}
			fmt.Fprintf(a.stderr, "perfdoctor: gate results in %s\n", g.out)
			if cmd.Context().Err() != nil {
				return errInterrupted
			}
			if res.Verdict == gate.Regression {
				return regressionError{"performance regression: " + res.Why}
			}
			return nil
		},
	}
	f.register(cmd, 3*time.Second)
	fl := cmd.Flags()
	fl.StringVar(&g.base, "base", "", "URL of the base build's service")
	fl.StringVar(&g.head, "head", "", "URL of the head build's service")
	fl.StringVar(&g.baseCmd, "base-cmd", "", "command that starts the base build (sh -c)")
	fl.StringVar(&g.headCmd, "head-cmd", "", "command that starts the head build (sh -c)")
	fl.StringVar(&g.basePprof, "base-pprof", "", "the base build's pprof URL: profile and diagnose it after the rounds")
	fl.StringVar(&g.headPprof, "head-pprof", "", "the head build's pprof URL")
	fl.StringVar(&g.baseBench, "base-bench", "", "go test -bench output of the base build (-count 6 or more)")
	fl.StringVar(&g.headBench, "head-bench", "", "go test -bench output of the head build")
	fl.StringSliceVar(&g.baseProfile, "base-profile", nil, "profiles of the base build (go test -cpuprofile), or a bundle")
	fl.StringSliceVar(&g.headProfile, "head-profile", nil, "profiles of the head build")
	fl.StringVar(&g.judge, "judge", gate.JudgeCPU, "services: cpu (CPU per request, both builds on this host) or load (throughput and p99)")
	fl.Float64Var(&g.threshold, "threshold", 0.02, "regressions smaller than this fraction pass (0.02 = 2%)")
	fl.IntVar(&g.rounds, "rounds", 6, "services: rounds, each measuring both builds once")
	fl.DurationVar(&g.warmup, "warmup", time.Second, "services: load before each measurement, not counted")
	fl.DurationVar(&g.ready, "ready-timeout", 30*time.Second, "how long a started build may take to accept connections")
	fl.DurationVar(&g.window, "profile-window", 5*time.Second, "services: how long to profile each build under load")
	fl.BoolVar(&g.fresh, "fresh", false, "services: start each build anew for every measurement, so that two processes of one build differing (memory layout, what they warmed) counts as noise, not as a change")
	fl.DurationVar(&g.settle, "jit-settle", jvm.DefaultSettle, "services: for a build that is a local JVM, load it at most this long before the first round until its JIT compiler goes quiet, so that no round measures it compiling; not with --fresh, whose every measurement is a new process; 0 does not wait")
	fl.BoolVar(&g.together, "together", false, "services: load both builds at the same time in each round (steadier CPU per request on a busy machine)")
	fl.StringVar(&g.out, "out", "", "directory for gate.md, gate.json, diff.html and each side's reports")
	return cmd
}

// gateService runs the paired rounds on the two services and, given their
// pprof URLs, profiles and diagnoses each.
func (a *app) gateService(cmd *cobra.Command, f *loadFlags, g *gateFlags) (*gate.Result, error) {
	settleErr := checkJITSettle(g.settle)
	switch {
	case g.base == "" || g.head == "":
		return nil, usageError{errors.New("gate needs both --base URL and --head URL")}
	case g.base == g.head:
		return nil, usageError{errors.New("--base and --head are the same URL; give each build its own address")}
	case g.rounds < 2 || g.rounds > 100:
		return nil, usageError{fmt.Errorf("--rounds %d out of range 2..100 (one round has no confidence interval)", g.rounds)}
	case g.judge != gate.JudgeCPU && g.judge != gate.JudgeLoad:
		return nil, usageError{fmt.Errorf("--judge %q: want cpu or load", g.judge)}
	case (g.basePprof == "") != (g.headPprof == ""):
		return nil, usageError{errors.New("give both --base-pprof and --head-pprof, or neither")}
	case g.warmup < 0 || g.warmup > load.MaxDuration:
		return nil, usageError{fmt.Errorf("--warmup %s out of range", g.warmup)}
	case g.window < time.Second || g.window > load.MaxDuration:
		return nil, usageError{fmt.Errorf("--profile-window %s out of range 1s..%s", g.window, load.MaxDuration)}
	case len(g.baseProfile)+len(g.headProfile) > 0:
		return nil, usageError{errors.New("--base-profile and --head-profile go with --base-bench; services are profiled through --base-pprof and --head-pprof")}
	case settleErr != nil:
		return nil, settleErr
	case g.fresh && cmd.Flags().Changed("jit-settle"):
		return nil, usageError{errors.New("--jit-settle does not apply with --fresh: every measurement starts a new process, whose JIT no wait before the first round can settle")}
	case g.fresh && (g.baseCmd == "" || g.headCmd == ""):
		return nil, usageError{errors.New("--fresh starts each build for every measurement: it needs --base-cmd and --head-cmd")}
	}
	cfgs, restore, err := f.configure(cmd, g.base, g.head)
	if err != nil {
		return nil, err
	}
	defer restore()
	ctx := cmd.Context()
	var echo io.Writer
	if a.verbose {
		echo = a.stderr
	}
	sides := []struct{ name, command, url string }{{"base", g.baseCmd, g.base}, {"head", g.headCmd, g.head}}
	start := func(i int) (*supervise.Process, int, error) {
		s := sides[i]
		p, err := verify.StartTarget(ctx, s.name, s.command, s.url, g.ready, echo, a.log)
		if err != nil {
			return nil, 0, err
		}
		// The process answering on the port, not the shell around it.
		pid := verify.LocalPID(s.url)
		if pid == 0 {
			pid = p.PID()
		}
		return p, pid, nil
	}
	o := verify.Options{Before: cfgs[0], After: cfgs[1], Rounds: g.rounds, Warmup: g.warmup, MinChange: g.threshold, Together: g.together,
		OnRound: func(done, of int, r verify.Round) { fmt.Fprintln(a.stderr, loadtext.RoundLine(done, of, r)) },
	}
	if g.fresh {
		o.Start = func(_ context.Context, i int) (int, func(), error) {
			p, pid, err := start(i)
			if err != nil {
				return 0, nil, err
			}
			return pid, p.Stop, nil
		}
	} else {
		for i, s := range sides {
			if s.command == "" {
				continue
			}
			p, _, err := start(i)
			if err != nil {
				return nil, err
			}
			defer p.Stop()
		}
		o.PIDs = [2]int{verify.LocalPID(g.base), verify.LocalPID(g.head)}
		o.Settle = g.settle
		o.Progress = progress.New(os.Stderr)
	}
	v, err := verify.Run(ctx, o)
	if err != nil {
		return nil, err
	}
	res, err := gate.JudgeService(v, g.judge, g.threshold)
	if err != nil {
		return nil, err
	}
	if _, err := verifyreport.Save(g.out, v, "perfdoctor gate: "+g.head+" (head) against "+g.base+" (base)"); err != nil {
		return nil, err
	}
	res.Files = append(res.Files, "verify.md", "verify.html")
	if g.basePprof == "" {
		res.DiffNote = "no --base-pprof and --head-pprof were given"
		return res, nil
	}
	if g.fresh {
		// The rounds stopped their processes: start both for the profiles.
		for i := range sides {
			p, _, err := start(i)
			if err != nil {
				return nil, err
			}
			defer p.Stop()
		}
	}
	var reps [2]*report.Report
	for i, side := range []struct{ name, pprof string }{{"base", g.basePprof}, {"head", g.headPprof}} {
		if ctx.Err() != nil {
			return res, nil
		}
		cfg := cfgs[i]
		cfg.Duration = g.window
		dir := filepath.Join(g.out, side.name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("output: %w", err)
		}
		fmt.Fprintf(a.stderr, "perfdoctor: profiling the %s build for %s under the same load\n", side.name, g.window)
		_, err := underload.Run(ctx, underload.Options{PprofURL: side.pprof, Load: cfg, Warmup: g.warmup,
			BundleDir: filepath.Join(dir, "bundle"), Progress: progress.New(os.Stderr), Logger: a.log, Messages: io.Discard})
		if err != nil {
			return nil, fmt.Errorf("profiling the %s build: %w", side.name, err)
		}
		if reps[i], err = a.diagnoseSide(ctx, side.name, dir, filepath.Join(dir, "bundle")); err != nil {
			return nil, err
		}
	}
	res.Compare(reps[0], reps[1])
	if res.Diff != nil {
		res.Diff.Tool = a.tool()
	}
	return res, nil
}

// gateBenchmarks judges two files of benchmark results and, given their
// profiles, diagnoses and diffs them.
func (a *app) gateBenchmarks(ctx context.Context, g *gateFlags) (*gate.Result, error) {
	switch {
	case g.baseBench == "" || g.headBench == "":
		return nil, usageError{errors.New("gate needs both --base-bench FILE and --head-bench FILE")}
	case (len(g.baseProfile) == 0) != (len(g.headProfile) == 0):
		return nil, usageError{errors.New("give both --base-profile and --head-profile, or neither")}
	case g.baseCmd != "" || g.headCmd != "" || g.basePprof != "" || g.headPprof != "":
		return nil, usageError{errors.New("--base-cmd, --head-cmd, --base-pprof and --head-pprof go with --base and --head (services)")}
	}
	var sets [2]*gate.Benchmarks
	for i, side := range []struct{ name, path string }{{"base", g.baseBench}, {"head", g.headBench}} {
		fh, err := os.Open(side.path)
		if err != nil {
			return nil, fmt.Errorf("--%s-bench: %w", side.name, err)
		}
		sets[i], err = gate.ParseBenchmarks(fh)
		fh.Close()
		if err != nil {
			return nil, fmt.Errorf("--%s-bench %s: %w", side.name, side.path, err)
		}
	}
	res, err := gate.JudgeBenchmarks(sets[0], sets[1], g.threshold)
	if err != nil {
		return nil, err
	}
	res.Base, res.Head = g.baseBench, g.headBench
	if len(g.baseProfile) == 0 {
		res.DiffNote = "no --base-profile and --head-profile were given"
		return res, nil
	}
	var reps [2]*report.Report
	for i, side := range []struct {
		name  string
		paths []string
	}{{"base", g.baseProfile}, {"head", g.headProfile}} {
		dir := filepath.Join(g.out, side.name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("output: %w", err)
		}
		if reps[i], err = a.diagnoseSide(ctx, side.name, dir, side.paths...); err != nil {
			return nil, err
		}
	}
	res.Compare(reps[0], reps[1])
	if res.Diff != nil {
		res.Diff.Tool = a.tool()
	}
	return res, nil
}

// diagnoseSide diagnoses one build's evidence and saves its reports in dir.
func (a *app) diagnoseSide(ctx context.Context, name, dir string, paths ...string) (*report.Report, error) {
	rep, err := diagnose.Run(ctx, a.diagnoseRequest(paths...))
	if err != nil {
		return nil, fmt.Errorf("diagnosing the %s build: %w", name, err)
	}
	if err := diagnose.SaveReports(dir, rep); err != nil {
		return nil, err
	}
	return rep, nil
}
