package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/perfdoctor/perfdoctor/bundle"
	"github.com/perfdoctor/perfdoctor/casebook/serve"
	"github.com/perfdoctor/perfdoctor/load"
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
		Long: `Demo starts casebook case D1 (a Go service whose allocation rate drives the
garbage collector), drives load at it, collects a bundle while the load runs,
diagnoses it and prints the findings. The bundle and the reports are written
to ./perfdoctor-demo/. Nothing needs to be installed or configured.`,
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
	svc, err := startCasebookService(ctx, "d1", "bad")
	if err != nil {
		return fmt.Errorf("starting the demo service: %w", err)
	}
	defer svc.stop()
	fmt.Fprintf(a.stderr, "demo: casebook D1 (bad variant) serving %s, pprof at %s, pid %d\n", svc.appURL, svc.pprofURL, svc.cmd.Process.Pid)
	cfg := load.Config{URL: svc.appURL, Concurrency: concurrency, Duration: duration}
	if err := a.profileUnderLoad(ctx, svc.pprofURL, cfg, demoWarmup, dir, "text"); err != nil {
		return err
	}
	bundleDir := filepath.Join(dir, "bundle")
	fmt.Fprintf(a.stderr, "demo: try: perfdoctor diagnose %s, go tool pprof %s\n", bundleDir, filepath.Join(bundleDir, bundle.CPUFile))
	return nil
}

// removeOldBundle clears a previous demo's bundle, and only a bundle: a
// directory without a perfdoctor manifest is left alone.
func removeOldBundle(dir string) error {
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if _, err := bundle.ReadManifest(dir); err != nil {
		return fmt.Errorf("%s exists and is not a perfdoctor bundle; move it away or choose another --output", dir)
	}
	return os.RemoveAll(dir)
}

// childService is a casebook service running as a child process: its own
// process, so its profiles hold only the service's work, not the load's.
type childService struct {
	cmd              *exec.Cmd
	appURL, pprofURL string
	waitDone         chan struct{}
}

func startCasebookService(ctx context.Context, caseName, variant string) (*childService, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(exe, "casebook-serve", "--case", caseName, "--variant", variant)
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	s := &childService{cmd: cmd, waitDone: make(chan struct{})}
	ready := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		if !sc.Scan() {
			ready <- errors.New("service exited before it was ready")
			return
		}
		app, pprofURL, err := parseReady(sc.Text())
		s.appURL, s.pprofURL = app, pprofURL
		ready <- err
		for sc.Scan() { // keep the pipe drained
		}
	}()
	go func() { cmd.Wait(); close(s.waitDone) }()
	select {
	case err = <-ready:
	case <-time.After(15 * time.Second):
		err = errors.New("service not ready after 15s")
	case <-ctx.Done():
		err = ctx.Err()
	}
	if err != nil {
		s.stop()
		return nil, err
	}
	return s, nil
}

// parseReady reads "ready app=URL pprof=URL".
func parseReady(line string) (app, pprofURL string, err error) {
	for _, f := range strings.Fields(line) {
		if v, ok := strings.CutPrefix(f, "app="); ok {
			app = v
		}
		if v, ok := strings.CutPrefix(f, "pprof="); ok {
			pprofURL = v
		}
	}
	if !strings.HasPrefix(line, "ready ") || app == "" || pprofURL == "" {
		return "", "", fmt.Errorf("unexpected readiness line %q", line)
	}
	return app, pprofURL, nil
}

// stop ends the child by its PID: SIGTERM, then SIGKILL after a grace period.
func (s *childService) stop() {
	if s.cmd.Process == nil {
		return
	}
	s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.waitDone:
	case <-time.After(5 * time.Second):
		s.cmd.Process.Kill()
		<-s.waitDone
	}
}

func (a *app) casebookServeCommand() *cobra.Command {
	var caseName, variant, listen, pprofAddr string
	cmd := &cobra.Command{
		Use:    "casebook-serve",
		Short:  "Serve a casebook reproduction (used by demo)",
		Hidden: true,
		Args:   exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			svc, err := serve.Start(cmd.Context(), caseName, variant, listen, pprofAddr, serve.WithReexec())
			if err != nil {
				return err
			}
			defer svc.Close()
			fmt.Fprintf(a.stdout, "ready app=%s pprof=%s\n", svc.AppURL, svc.PprofURL)
			<-cmd.Context().Done()
			return nil
		},
	}
	cmd.Flags().StringVar(&caseName, "case", "d1", "casebook case")
	cmd.Flags().StringVar(&variant, "variant", "bad", "bad or fixed")
	cmd.Flags().StringVar(&listen, "listen", "127.0.0.1:0", "application address")
	cmd.Flags().StringVar(&pprofAddr, "pprof", "127.0.0.1:0", "pprof address (loopback by default)")
	return cmd
}
