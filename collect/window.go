package collect

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/google/pprof/profile"

	"github.com/perfdoctor/perfdoctor/bundle"
	"github.com/perfdoctor/perfdoctor/collect/perf"
	"github.com/perfdoctor/perfdoctor/collect/system"
	"github.com/perfdoctor/perfdoctor/formats/perfscript"
	"github.com/perfdoctor/perfdoctor/internal/progress"
)

// WindowOptions says what ObserveWindow watches.
type WindowOptions struct {
	PID         int // also the process, its cgroup; 0 for the host alone
	Duration    time.Duration
	Perf        bool // record stacks with kernel frames (the process, else every CPU)
	SourceLines bool // ask perf for file:line (native services built with -g)
	// NoChildren observes the process alone: by default its descendants
	// (children, theirs, ...) are snapshotted and recorded with it, those
	// forked during the window included where perf follows them.
	NoChildren bool
	Roots      system.Roots
	Progress   *progress.Line
	Logger     *slog.Logger
}

// Window is the host (and a process) observed over a window: /proc
// snapshots at both ends and, when asked for, perf's stacks.
type Window struct {
	Start, End *bundle.SystemSnapshot
	Perf       *profile.Profile
	PerfErr    error // why there is no perf profile, when one was asked for
	// OffCPU is the process's off-CPU time from perf's scheduler events,
	// when perf was asked for with a process and the kernel permits them.
	OffCPU    *profile.Profile
	OffCPUErr error
	PerfAsked bool
	Started   time.Time
	Duration  time.Duration
	PID       int
	// Config is the configuration files of a known server (MariaDB,
	// PostgreSQL, PgBouncer, nginx...) as its command line names them,
	// read at the window's start; nil for another program or without a
	// process (ConfigErr then says why, unless it is not a server).
	Config    *bundle.ConfigFiles
	ConfigErr error
	// Tree is where the process tree's CPU went (the process, its
	// descendants by command line, perf's samples of each); nil without
	// a process, with NoChildren, or when it has no descendants.
	Tree *system.TreeUsage
}

// ObserveWindow snapshots /proc, waits o.Duration (recording perf
// meanwhile when asked) and snapshots again. perf failing is not an error:
// the window then carries PerfErr.
func ObserveWindow(ctx context.Context, o WindowOptions) (*Window, error) {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	w := &Window{Started: time.Now(), Duration: o.Duration, PID: o.PID, PerfAsked: o.Perf}
	snapshot := system.SnapshotTree
	if o.NoChildren {
		snapshot = system.Snapshot
	}
	var err error
	if w.Start, err = snapshot(o.Roots, o.PID); err != nil {
		return nil, err
	}
	if o.PID > 0 {
		// Files, not the process: what its settings say does not change
		// over the window, and reading them costs the target nothing.
		w.Config, w.ConfigErr = system.ConfigFiles(o.Roots, o.PID)
		if errors.Is(w.ConfigErr, system.ErrNotServer) {
			w.ConfigErr = nil
		}
	}
	var tree []int // the descendants perf records from the start
	for _, c := range w.Start.Children {
		tree = append(tree, c.PID)
	}
	var wg sync.WaitGroup
	if o.Perf {
		// The tree again, just before perf attaches: a child forked since
		// the snapshot (a database's backend for a client that just
		// connected) would be neither listed nor inherited.
		perfTree := tree
		if o.PID > 0 && !o.NoChildren {
			if now, err := system.Descendants(o.Roots, o.PID); err == nil {
				perfTree = now
			}
		}
		wg.Go(func() {
			w.Perf, w.PerfErr = perf.Record(ctx, perf.Options{PID: o.PID, Also: perfTree, OnlyPID: o.NoChildren, Duration: o.Duration, SourceLines: o.SourceLines, Logger: o.Logger})
		})
		if o.PID > 0 {
			wg.Go(func() {
				w.OffCPU, w.OffCPUErr = perf.RecordOffCPU(ctx, perf.Options{PID: o.PID, Also: perfTree, OnlyPID: o.NoChildren, Duration: o.Duration, Logger: o.Logger})
			})
		}
	}
	o.Progress.Update("observing for %s", o.Duration)
	t := time.NewTimer(o.Duration)
	select {
	case <-t.C:
	case <-ctx.Done():
		t.Stop()
		wg.Wait()
		return nil, fmt.Errorf("sys interrupted: %w", ctx.Err())
	}
	if w.End, err = snapshot(o.Roots, o.PID); err != nil {
		return nil, err
	}
	wg.Wait()
	if w.PerfErr != nil {
		o.Logger.Warn("perf unavailable", "err", w.PerfErr)
	}
	if !o.NoChildren && o.PID > 0 {
		w.Tree = system.Tree(w.Start, w.End)
		w.Tree.AddSamples(w.Perf)
	}
	return w, nil
}

// WriteBundle saves the window as a bundle at dir that diagnose reads.
func (w *Window) WriteBundle(dir, tool string) error {
	bw, err := bundle.Create(dir)
	if err != nil {
		return err
	}
	target := "this host"
	if w.PID != 0 {
		target = fmt.Sprintf("pid %d", w.PID)
	}
	m := &bundle.Manifest{Tool: tool, Target: target, Start: w.Started, End: w.End.Time, Duration: bundle.Duration(w.Duration), PID: w.PID}
	bw.AddJSON("system-start", bundle.SystemStartFile, w.Start, 0)
	bw.AddJSON("system-end", bundle.SystemEndFile, w.End, 0)
	switch {
	case w.Config != nil:
		bw.AddJSON("config-files", bundle.ConfigFilesFile, w.Config, 0)
		bw.Annotate("config-files", configNote(w.Config))
	case w.ConfigErr != nil:
		// Settings unread are no failure of the recording.
		bw.Skip("config-files", w.ConfigErr.Error())
	}
	switch {
	case w.Perf != nil:
		bw.AddProfile("perf", bundle.PerfFile, w.Perf, 0)
	case w.PerfAsked:
		bw.Fail("perf", w.PerfErr)
	}
	switch {
	case w.OffCPU != nil:
		bw.AddProfile("offcpu", bundle.OffCPUFile, w.OffCPU, 0)
		bw.Annotate("offcpu", perfscript.OffCPUIncomplete(w.OffCPU))
	case w.OffCPUErr != nil:
		bw.Skip("offcpu", w.OffCPUErr.Error())
	}
	bw.Complete(m)
	return bw.Finish(m, dir)
}

// configNote says what the manifest should know of the configuration
// files read: those unreadable, cut or redacted.
func configNote(c *bundle.ConfigFiles) string {
	var parts []string
	read, lines := 0, 0
	for _, f := range c.Files {
		switch {
		case f.Error != "":
			parts = append(parts, fmt.Sprintf("%s not read: %s", f.Path, f.Error))
		default:
			read++
			if f.Truncated {
				parts = append(parts, fmt.Sprintf("%s cut at %d KiB of %d", f.Path, bundle.MaxConfigFileBytes>>10, f.Size))
			}
		}
		lines += f.Redacted
	}
	parts = append([]string{fmt.Sprintf("%s: %d of %d files read", c.Program, read, len(c.Files))}, parts...)
	if lines > 0 {
		parts = append(parts, fmt.Sprintf("%d lines redacted", lines))
	}
	if c.Note != "" {
		parts = append(parts, c.Note)
	}
	return strings.Join(parts, "; ")
}

// Native records a local process of any language with perf, with source
// lines, and the /proc snapshots around the window, as a bundle in dir
// (perfdoctor-pidPID-TIME when empty). It returns the directory; an error
// after it was written (perf refused) says the bundle has no stacks.
func Native(ctx context.Context, o WindowOptions, dir, tool string) (string, error) {
	dir, _, err := ObserveNative(ctx, o, dir, tool)
	return dir, err
}

// ObserveNative is Native that also returns the window observed (nil when
// nothing was written), whose Tree says where a process tree's work is.
func ObserveNative(ctx context.Context, o WindowOptions, dir, tool string) (string, *Window, error) {
	if o.PID <= 0 {
		return "", nil, fmt.Errorf("--perf: PID %d is not a process", o.PID)
	}
	if o.Duration < MinDuration || o.Duration > MaxDuration {
		return "", nil, fmt.Errorf("duration %s out of range (%s to %s)", o.Duration, MinDuration, MaxDuration)
	}
	if dir == "" {
		dir = fmt.Sprintf("perfdoctor-pid%d-%s", o.PID, time.Now().Format("20060102-150405"))
	}
	if err := bundle.CheckDestination(dir); err != nil {
		return "", nil, err
	}
	o.Perf, o.SourceLines = true, true
	win, err := ObserveWindow(ctx, o)
	o.Progress.Clear()
	if err != nil {
		return "", nil, err
	}
	if err := win.WriteBundle(dir, tool); err != nil {
		return "", nil, err
	}
	if win.PerfErr != nil {
		return dir, win, fmt.Errorf("bundle written to %s without stacks: %w", dir, win.PerfErr)
	}
	return dir, win, nil
}
