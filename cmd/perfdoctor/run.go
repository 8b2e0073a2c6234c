package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/perfdoctor/perfdoctor/collect"
	"github.com/perfdoctor/perfdoctor/internal/progress"
	"github.com/perfdoctor/perfdoctor/load"
	"github.com/perfdoctor/perfdoctor/underload"
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
warm-up, then collects a bundle from --target's /debug/pprof while the load
continues for --duration, and diagnoses it. The load results go into the
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
			cfgs, restore, err := f.configure(cmd, loadTo)
			if err != nil {
				return err
			}
			defer restore()
			if dir == "" {
				dir = collect.DefaultBundleName(target, time.Now()) + "-run"
			}
			return a.profileUnderLoad(cmd.Context(), target, cfgs[0], warmup, dir, format)
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

// profileUnderLoad collects a bundle into dir/bundle under cfg's load,
// diagnoses it and writes the reports.
func (a *app) profileUnderLoad(ctx context.Context, pprofURL string, cfg load.Config, warmup time.Duration, dir, format string) error {
	res, err := underload.Diagnose(ctx, underload.Options{PprofURL: pprofURL, Load: cfg, Warmup: warmup,
		Progress: progress.New(os.Stderr), Logger: a.log, Messages: a.stderr}, a.diagnoseOptions(), dir, format, a.stdout)
	if err != nil {
		return err
	}
	if res.Load.Interrupted {
		return errInterrupted
	}
	return nil
}
