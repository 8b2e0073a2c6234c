package underload

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/perfdoctor/perfdoctor/bundle"
	"github.com/perfdoctor/perfdoctor/collect"
	"github.com/perfdoctor/perfdoctor/collect/jvm"
	"github.com/perfdoctor/perfdoctor/internal/progress"
)

// Collector collects a bundle into dir over window: Options.Collect.
type Collector = func(ctx context.Context, dir string, window time.Duration) (*bundle.Manifest, error)

// Perf collects a local process of any language through Linux perf, as
// `perfdoctor collect --perf` does. tool names the bundle's producer.
func Perf(pid int, tool string, line *progress.Line, log *slog.Logger) Collector {
	return func(ctx context.Context, dir string, window time.Duration) (*bundle.Manifest, error) {
		written, err := collect.Native(ctx, collect.WindowOptions{PID: pid, Duration: window, Progress: line, Logger: log}, dir, tool)
		if written == "" {
			return nil, err
		}
		m, rerr := bundle.ReadManifest(written)
		if rerr != nil {
			return nil, errors.Join(err, rerr)
		}
		return m, err
	}
}

// JVM records a local JVM, as `perfdoctor collect --jvm` (async-profiler
// and JFR, o.AsyncProfiler set) or --jfr (JFR alone) do. o's Duration and
// OutDir are the window's and dir's.
func JVM(o jvm.Options) Collector {
	return func(ctx context.Context, dir string, window time.Duration) (*bundle.Manifest, error) {
		o.Duration, o.OutDir = window, dir
		return jvm.Collect(ctx, o)
	}
}
