// Package underload profiles a service while loading it, for `perfdoctor
// run` and `perfdoctor demo`: it warms the service up, collects a bundle
// from its pprof endpoint while the same load runs, and saves the load's
// results into the bundle (load.json and the manifest's load summary).
package underload

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/perfdoctor/perfdoctor/bundle"
	"github.com/perfdoctor/perfdoctor/collect"
	"github.com/perfdoctor/perfdoctor/internal/progress"
	"github.com/perfdoctor/perfdoctor/load"
)

// Options says what to load and where to collect from.
type Options struct {
	PprofURL string
	// Collect, when set, collects the bundle instead of fetching PprofURL's
	// profiles: a process through perf, a JVM through JFR. Target names it
	// in messages.
	Collect func(ctx context.Context, dir string, window time.Duration) (*bundle.Manifest, error)
	Target  string
	Load    load.Config // its Duration is the collection window
	Warmup  time.Duration
	// Lead is how much longer than the window Collect may run before the
	// window begins (a JVM's wait for its JIT to settle): the load runs
	// that much longer at most.
	Lead      time.Duration
	BundleDir string // replaced if it holds a previous bundle; refused if it holds anything else
	Progress  *progress.Line
	Logger    *slog.Logger
	Messages  io.Writer // what is happening, one line at a time (stderr)
}

// Result is what one profiled load produced.
type Result struct {
	Manifest *bundle.Manifest // non-nil whenever a bundle was written, also with an error
	Load     *load.Result
}

// endSnapshotsMax bounds how long the load runs past the window while the
// end-of-window snapshots are taken.
const endSnapshotsMax = time.Minute

// Run warms up, then collects a bundle while the load runs and saves the
// load's results into it.
func Run(ctx context.Context, o Options) (*Result, error) {
	if err := removeOldBundle(o.BundleDir); err != nil {
		return nil, err
	}
	cfg := o.Load
	var warmup *bundle.LoadWarmup
	if o.Warmup > 0 {
		fmt.Fprintf(o.Messages, "perfdoctor: warming up %s with %s\n", o.Warmup, loadName(cfg))
		w := cfg
		w.Duration, w.Progress = o.Warmup, o.Progress
		res, err := load.Run(ctx, w)
		if err != nil {
			return nil, fmt.Errorf("load: %w", err)
		}
		if err := res.AllFailed(); err != nil {
			return nil, fmt.Errorf("warm-up %s: %w", loadName(cfg), err)
		}
		if res.Interrupted {
			return nil, fmt.Errorf("warm-up %s: %w", loadName(cfg), context.Canceled)
		}
		warmup = res.WarmupSummary()
	}

	loadCtx, stopLoad := context.WithCancel(ctx)
	defer stopLoad()
	type outcome struct {
		res *load.Result
		err error
	}
	loadDone := make(chan outcome, 1)
	go func() {
		// The load runs past the window until the collection has taken
		// its end-of-window snapshots (goroutines, heap, metrics), so they
		// show the service under load; then it is stopped.
		c := cfg
		if c.Duration > 0 {
			c.Duration = min(c.Duration+o.Lead+endSnapshotsMax, load.MaxDuration)
		}
		res, err := load.Run(loadCtx, c)
		if res != nil {
			res.Interrupted = ctx.Err() != nil // stopped by us, not by the user
		}
		loadDone <- outcome{res, err}
	}()
	var m *bundle.Manifest
	var cerr error
	if o.Collect != nil {
		fmt.Fprintf(o.Messages, "perfdoctor: collecting %s from %s under load\n", cfg.Duration, o.Target)
		m, cerr = o.Collect(ctx, o.BundleDir, cfg.Duration)
	} else {
		fmt.Fprintf(o.Messages, "perfdoctor: collecting %s from %s under load\n", cfg.Duration, o.PprofURL)
		m, cerr = collect.Collect(ctx, collect.Options{
			Target:   o.PprofURL,
			Duration: cfg.Duration,
			OutDir:   o.BundleDir,
			Progress: o.Progress,
			Logger:   o.Logger,
		})
	}
	o.Progress.Clear()
	stopLoad()
	lo := <-loadDone
	if lo.res != nil {
		lo.res.Warmup = warmup
	}
	r := &Result{Manifest: m, Load: lo.res}
	if cerr != nil {
		return r, cerr
	}
	if lo.err != nil {
		return r, fmt.Errorf("load: %w", lo.err)
	}
	summary := bundle.LoadSummary{URL: cfg.URL, Concurrency: cfg.Concurrency, Rate: cfg.Rate, Duration: bundle.Duration(lo.res.Duration)}
	if cfg.Command != "" {
		summary.Concurrency, summary.Command, summary.Unit = 0, lo.res.Schema().Command, cfg.Unit
	}
	if err := bundle.AddLoad(o.BundleDir, lo.res.Schema(), summary); err != nil {
		return r, fmt.Errorf("saving load results: %w", err)
	}
	return r, nil
}

// loadName names the load in messages: its URL, or its command.
func loadName(cfg load.Config) string {
	if cfg.Command != "" {
		return "the load command"
	}
	return "load on " + cfg.URL
}

// removeOldBundle clears a previous run's bundle, and only a bundle: a
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
