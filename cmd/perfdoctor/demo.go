package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/perfdoctor/perfdoctor/bundle"
	"github.com/perfdoctor/perfdoctor/internal/demoservice"
	"github.com/perfdoctor/perfdoctor/internal/progress"
	"github.com/perfdoctor/perfdoctor/internal/supervise"
	"github.com/perfdoctor/perfdoctor/load"
	"github.com/perfdoctor/perfdoctor/underload"
)

func (a *app) demoCommand() *cobra.Command {
	var (
		dir         string
		duration    time.Duration
		concurrency int
	)
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Run the whole loop on a bundled service with a real bottleneck",
		Long: `Demo starts a small bundled Go service (a product search whose allocation
rate drives the garbage collector) as a child process, drives load at it,
collects a bundle while the load runs, diagnoses it and prints the findings.
The bundle and the reports are written to ./perfdoctor-demo/. Nothing needs
to be installed or configured.`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.demo(cmd.Context(), dir, duration, concurrency)
		},
	}
	cmd.Flags().StringVarP(&dir, "output", "o", "perfdoctor-demo", "directory for the bundle and reports")
	cmd.Flags().DurationVarP(&duration, "duration", "d", 10*time.Second, "how long to profile under load")
	cmd.Flags().IntVarP(&concurrency, "concurrency", "c", 8, "concurrent load connections")
	return cmd
}

const demoWarmup = 2 * time.Second

func (a *app) demo(ctx context.Context, dir string, duration time.Duration, concurrency int) error {
	// The service runs as a child process, so its profiles hold only the
	// service's work, not the load's.
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	p, ready, err := supervise.StartLine(ctx, exec.Command(exe, "demo-service"), demoservice.ReadyPrefix, 15*time.Second)
	if err != nil {
		return fmt.Errorf("starting the demo service: %w", err)
	}
	defer p.Stop()
	appURL, pprofURL, err := demoservice.ParseReady(ready)
	if err != nil {
		return fmt.Errorf("starting the demo service: %w", err)
	}
	fmt.Fprintf(a.stderr, "demo: sample service serving %s, pprof at %s, pid %d\n", appURL, pprofURL, p.PID())
	cfg := load.Config{URL: appURL, Concurrency: concurrency, Duration: duration}
	o := underload.Options{PprofURL: pprofURL, Load: cfg, Warmup: demoWarmup,
		Progress: progress.New(os.Stderr), Logger: a.log, Messages: a.stderr}
	if err := a.profileUnderLoad(ctx, o, dir, "text"); err != nil {
		return err
	}
	bundleDir := filepath.Join(dir, "bundle")
	fmt.Fprintf(a.stderr, "demo: try: perfdoctor diagnose %s, go tool pprof %s\n", bundleDir, filepath.Join(bundleDir, bundle.CPUFile))
	return nil
}

func (a *app) demoServiceCommand() *cobra.Command {
	return &cobra.Command{
		Use:    "demo-service",
		Short:  "Serve the demo's sample service on loopback (started by demo)",
		Hidden: true,
		Args:   exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			svc, err := demoservice.Start(cmd.Context(), "127.0.0.1:0", "127.0.0.1:0")
			if err != nil {
				return err
			}
			defer svc.Close()
			fmt.Fprintln(a.stdout, svc.ReadyLine())
			<-cmd.Context().Done()
			return nil
		},
	}
}
