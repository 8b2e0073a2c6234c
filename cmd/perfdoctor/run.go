package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/perfdoctor/perfdoctor/bundle"
	"github.com/perfdoctor/perfdoctor/collect"
	"github.com/perfdoctor/perfdoctor/internal/progress"
	"github.com/perfdoctor/perfdoctor/load"
)

func (a *app) runCommand() *cobra.Command {
	var (
		f              loadFlags
		target, loadTo string
		dir            string
		warmup         time.Duration
		format         string
	)
	cmd := &cobra.Command{
		Use:   "run --target PPROF_URL --load URL",
		Short: "Load a service, collect a bundle during steady load, and diagnose it",
		Long: `Run drives load at --load (the same options as perfdoctor load), waits out the
warm-up, then collects a bundle from --target's /debug/pprof over --duration
while the load continues (until the end-of-window snapshots are taken, so
they show the service under load), and diagnoses it. The load results go into the
bundle as load.json and into the report next to the findings. The bundle and
reports (report.txt, report.json, report.html) are written to --output.`,
		Example: `  perfdoctor run --target http://127.0.0.1:6060 --load http://127.0.0.1:8080/api -c 16 -d 30s
  perfdoctor run --target http://127.0.0.1:6060 --load http://127.0.0.1:8080/ --rate 2000 -o ./run1`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if target == "" || loadTo == "" {
				return usageError{errors.New("run needs --target PPROF_URL and --load URL")}
			}
			if warmup < 0 || warmup > 10*time.Minute {
				return usageError{fmt.Errorf("--warmup %s out of range 0..10m", warmup)}
			}
			if _, ok := map[string]bool{"text": true, "json": true, "markdown": true, "html": true}[format]; !ok {
				return usageError{fmt.Errorf("--format %q: want text, json, markdown or html", format)}
			}
			cfg, err := f.config(cmd, loadTo)
			if err != nil {
				return err
			}
			restore, err := f.limitProcs()
			if err != nil {
				return err
			}
			defer restore()
			if dir == "" {
				dir = defaultBundleName(target, time.Now()) + "-run"
			}
			return a.profileUnderLoad(cmd.Context(), target, cfg, warmup, dir, format)
		},
	}
	f.register(cmd, 30*time.Second)
	cmd.Flags().StringVar(&target, "target", "", "the service's pprof URL (http://host:port or .../debug/pprof/)")
	cmd.Flags().StringVar(&loadTo, "load", "", "URL to load (http://, https:// or udp://)")
	cmd.Flags().DurationVar(&warmup, "warmup", 5*time.Second, "load before collecting starts")
	cmd.Flags().StringVarP(&dir, "output", "o", "", "directory for the bundle and reports (default perfdoctor-HOST-TIME-run)")
	cmd.Flags().StringVar(&format, "format", "text", "report on stdout: text, json, markdown or html")
	return cmd
}

// endSnapshotsMax bounds how long the load runs past the window while the
// end-of-window snapshots are taken.
const endSnapshotsMax = time.Minute

// profileUnderLoad warms the target up with cfg's load, then collects a
// bundle into dir/bundle while the same load runs for cfg.Duration, saves
// the load results into the bundle, diagnoses it and writes the reports.
func (a *app) profileUnderLoad(ctx context.Context, pprofURL string, cfg load.Config, warmup time.Duration, dir, format string) error {
	bundleDir := filepath.Join(dir, "bundle")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("output: %w", err)
	}
	if err := removeOldBundle(bundleDir); err != nil {
		return err
	}
	line := progress.New(os.Stderr)
	if warmup > 0 {
		fmt.Fprintf(a.stderr, "perfdoctor: warming up %s with load on %s\n", warmup, cfg.URL)
		w := cfg
		w.Duration, w.Progress = warmup, line
		res, err := load.Run(ctx, w)
		if err != nil {
			return fmt.Errorf("load: %w", err)
		}
		if err := loadOutcome(res); err != nil {
			return fmt.Errorf("warm-up load on %s: %w", cfg.URL, err)
		}
	}

	// The load runs past the window until the collection has taken its
	// end-of-window snapshots (goroutines, heap, metrics), so they show the
	// service under load, then stops.
	loadCtx, stopLoad := context.WithCancel(ctx)
	defer stopLoad()
	type outcome struct {
		res *load.Result
		err error
	}
	loadDone := make(chan outcome, 1)
	go func() {
		c := cfg
		if c.Duration > 0 {
			c.Duration = min(c.Duration+endSnapshotsMax, load.MaxDuration)
		}
		res, err := load.Run(loadCtx, c)
		if res != nil {
			res.Interrupted = ctx.Err() != nil // stopped by us, not by the user
		}
		loadDone <- outcome{res, err}
	}()
	fmt.Fprintf(a.stderr, "perfdoctor: collecting %s from %s under load\n", cfg.Duration, pprofURL)
	m, cerr := collect.Collect(ctx, collect.Options{
		Target:   pprofURL,
		Duration: cfg.Duration,
		OutDir:   bundleDir,
		Progress: line,
		Logger:   a.log,
	})
	line.Clear()
	stopLoad()
	lo := <-loadDone
	if m != nil {
		printCollected(a, bundleDir, m)
	}
	if cerr != nil {
		return cerr
	}
	if lo.err != nil {
		return fmt.Errorf("load: %w", lo.err)
	}
	fmt.Fprintf(a.stderr, "perfdoctor: load: %s\n", lo.res)
	for _, w := range lo.res.Warnings {
		fmt.Fprintf(a.stderr, "perfdoctor: warning: %s\n", w)
	}
	summary := bundle.LoadSummary{URL: cfg.URL, Concurrency: cfg.Concurrency, Rate: cfg.Rate, Duration: bundle.Duration(lo.res.Duration)}
	if err := bundle.AddLoad(bundleDir, lo.res, summary); err != nil {
		return fmt.Errorf("saving load results: %w", err)
	}

	rep, err := diagnose(bundleDir)
	if err != nil {
		return err
	}
	if err := writeReport(a.stdout, "", format, rep); err != nil {
		return err
	}
	for _, f := range []struct{ format, ext string }{{"text", "txt"}, {"json", "json"}, {"html", "html"}} {
		if err := writeReport(nil, filepath.Join(dir, "report."+f.ext), f.format, rep); err != nil {
			return err
		}
	}
	fmt.Fprintf(a.stderr, "\nperfdoctor: bundle in %s, reports in %s\n", bundleDir, filepath.Join(dir, "report.{txt,json,html}"))
	if lo.res.Interrupted {
		return errInterrupted
	}
	return nil
}
