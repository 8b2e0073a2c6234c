// Package agent is perfdoctor's in-process companion for Go services: one
// call to Start serves pprof and a runtime-metrics JSON endpoint on a
// listener of its own (loopback by default, optionally behind a bearer
// token), checks GOMAXPROCS against the CPU limits of the whole cgroup
// hierarchy, optionally derives GOMEMLIMIT from the container memory limit
// and tunes GOGC against it, and captures a perfdoctor bundle to local disk
// when CPU, goroutines, RSS or GC CPU share jump.
//
// The agent never touches the application's mux or the global logger, and
// imports neither net/http/pprof (whose init registers on
// http.DefaultServeMux) nor anything of perfdoctor beyond package bundle.
package agent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// Options configures the agent. The zero value serves the endpoints on a
// random loopback port and changes nothing in the runtime.
type Options struct {
	// Addr is the listen address; default "127.0.0.1:0". Anything but a
	// loopback address is refused unless AllowRemote is set.
	Addr        string
	AllowRemote bool
	// Token, when set, is required on every request as
	// "Authorization: Bearer <Token>".
	Token string
	// Logger receives the agent's decisions and errors; nil discards them.
	Logger *slog.Logger

	// MemoryLimit derives GOMEMLIMIT = MemoryLimitFraction × the cgroup
	// memory limit when no GOMEMLIMIT is set (environment or program).
	MemoryLimit         bool
	MemoryLimitFraction float64 // default 0.9
	// GOGCTuner raises GOGC while the live heap is small against the memory
	// limit (the cgroup's, else GOMEMLIMIT), aiming the heap goal at
	// GOGCTargetFraction of it, and backs off toward GOGCMin as the heap
	// grows. Off when GOGC is set in the environment.
	GOGCTuner          bool
	GOGCTargetFraction float64       // default 0.7
	GOGCMin, GOGCMax   int           // default 100 and 500
	TuneInterval       time.Duration // GOGC and GOMAXPROCS re-evaluation; default 5s

	// SetGOMAXPROCS lowers GOMAXPROCS to the effective CPU limit of the
	// whole cgroup hierarchy (the runtime reads only the leaf) unless
	// GOMAXPROCS is set in the environment. The check itself always runs.
	SetGOMAXPROCS bool

	// CaptureDir arms anomaly capture: bundles go into this directory.
	// Empty disables the watcher.
	CaptureDir      string
	CaptureCPU      time.Duration // CPU profile length; default 5s
	CaptureMaxBytes int64         // disk cap over all captures; default 64 MiB
	CaptureMaxCount int           // default 20
	WatchInterval   time.Duration // default 5s
	// Triggers arms the watcher; nil uses DefaultTriggers.
	Triggers *Triggers
	// FlightRecorder, with CaptureDir, runs the runtime's flight recorder
	// (one per process) so each capture starts with the execution trace of
	// the FlightRecorderAge (default 10s) before its trigger, held in at
	// most about FlightRecorderMaxBytes (default 32 MiB) of memory. Off by
	// default: tracing all the time cost a light HTTP service 3% of CPU per
	// request, the rest of the agent nothing measurable (docs/overhead.md).
	FlightRecorder         bool
	FlightRecorderAge      time.Duration
	FlightRecorderMaxBytes uint64

	// CgroupFS and ProcCgroup locate the cgroup mount and this process's
	// cgroup file; defaults /sys/fs/cgroup and /proc/self/cgroup. For tests
	// and unusual mounts.
	CgroupFS   string
	ProcCgroup string
}

func (o *Options) setDefaults() {
	if o.Addr == "" {
		o.Addr = "127.0.0.1:0"
	}
	if o.MemoryLimitFraction <= 0 || o.MemoryLimitFraction > 1 {
		o.MemoryLimitFraction = 0.9
	}
	if o.GOGCTargetFraction <= 0 || o.GOGCTargetFraction > 1 {
		o.GOGCTargetFraction = 0.7
	}
	if o.GOGCMin <= 0 {
		o.GOGCMin = 100
	}
	if o.GOGCMax < o.GOGCMin {
		o.GOGCMax = max(500, o.GOGCMin)
	}
	if o.TuneInterval <= 0 {
		o.TuneInterval = 5 * time.Second
	}
	if o.CaptureCPU <= 0 {
		o.CaptureCPU = 5 * time.Second
	}
	if o.CaptureMaxBytes <= 0 {
		o.CaptureMaxBytes = 64 << 20
	}
	if o.CaptureMaxCount <= 0 {
		o.CaptureMaxCount = 20
	}
	if o.WatchInterval <= 0 {
		o.WatchInterval = 5 * time.Second
	}
	if o.FlightRecorderAge <= 0 {
		o.FlightRecorderAge = 10 * time.Second
	}
	if o.FlightRecorderMaxBytes == 0 {
		o.FlightRecorderMaxBytes = 32 << 20
	}
	if o.CgroupFS == "" {
		o.CgroupFS = "/sys/fs/cgroup"
	}
	if o.ProcCgroup == "" {
		o.ProcCgroup = "/proc/self/cgroup"
	}
}

// Agent is a running agent. Close stops it.
type Agent struct {
	opts    Options
	log     *slog.Logger
	rt      runtimeCtl
	ln      net.Listener
	srv     *http.Server
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	closed  atomic.Bool
	sampler *sampler

	mu         sync.Mutex // guards what Status reports
	limits     *Limits
	limitsErr  string
	procs      ProcsDecision
	procsOwned bool
	memLimit   *MemoryLimitDecision
	memSet     bool
	tuner      *gogcTuner
	gogc       *GOGCDecision
	watch      *watcher
	triggers   Triggers
	last       Reading
	captures   []CaptureRecord
	capturing  atomic.Bool
	flight     *flightRecorder // nil when off
	flightErr  string
}

// ErrNotLoopback is returned by Start for a non-loopback address without
// Options.AllowRemote.
var ErrNotLoopback = errors.New("agent: refusing a non-loopback listen address (set Options.AllowRemote to allow it)")

// Start applies the options and starts serving. ctx bounds the agent's
// life: when it is done the agent closes itself.
func Start(ctx context.Context, opts Options) (*Agent, error) {
	return start(ctx, opts, realRuntime())
}

func start(ctx context.Context, opts Options, rt runtimeCtl) (*Agent, error) {
	opts.setDefaults()
	if !opts.AllowRemote {
		if err := checkLoopback(opts.Addr); err != nil {
			return nil, err
		}
	}
	ln, err := net.Listen("tcp", opts.Addr)
	if err != nil {
		return nil, fmt.Errorf("agent: %w", err)
	}
	if tcp, ok := ln.Addr().(*net.TCPAddr); ok && !opts.AllowRemote && !tcp.IP.IsLoopback() {
		ln.Close() // "localhost" resolved to something else
		return nil, ErrNotLoopback
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	a := &Agent{opts: opts, log: log, rt: rt, ln: ln, sampler: newSampler()}
	a.setup()
	a.srv = &http.Server{
		Handler:           a.handler(),
		ReadHeaderTimeout: 5 * time.Second,
		IdleTimeout:       time.Minute,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelDebug),
	}
	ctx, a.cancel = context.WithCancel(ctx)
	a.wg.Add(2)
	go func() {
		defer a.wg.Done()
		if err := a.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			a.log.Error("agent: serve", "err", err)
		}
	}()
	go func() {
		defer a.wg.Done()
		a.loop(ctx)
	}()
	context.AfterFunc(ctx, func() { a.Close() })
	a.log.Info("agent: serving", "addr", ln.Addr().String(), "auth", opts.Token != "", "capture", opts.CaptureDir)
	return a, nil
}

// checkLoopback accepts "localhost" and loopback IPs; an empty host means
// every interface and is refused.
func checkLoopback(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("agent: listen address %q: %w", addr, err)
	}
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	return fmt.Errorf("%w: %q", ErrNotLoopback, addr)
}

// setup reads the cgroup limits and makes the start-up decisions.
func (a *Agent) setup() {
	lim, err := readLimits(cgroupFiles{procCgroup: a.opts.ProcCgroup, mount: a.opts.CgroupFS})
	if err != nil {
		a.limitsErr = err.Error()
		a.log.Debug("agent: cgroup limits", "err", err)
	}
	a.limits = lim
	a.procs = checkProcs(a.rt, lim, a.opts.SetGOMAXPROCS, false)
	a.procsOwned = a.procs.Applied
	a.log.Info("agent: GOMAXPROCS check", "gomaxprocs", a.procs.GOMAXPROCS, "recommended", a.procs.Recommended, "applied", a.procs.Applied, "reason", a.procs.Reason)
	if a.opts.MemoryLimit {
		d := decideMemoryLimit(a.rt, lim, a.opts.MemoryLimitFraction)
		a.memLimit, a.memSet = &d, d.Applied
		a.log.Info("agent: GOMEMLIMIT", "gomemlimit", d.GOMEMLIMIT, "applied", d.Applied, "reason", d.Reason)
	}
	if a.opts.GOGCTuner {
		t, d := newGOGCTuner(a.rt, lim, &a.opts)
		if t != nil {
			d = t.evaluate(time.Now())
		}
		a.tuner, a.gogc = t, &d
		a.log.Info("agent: GOGC tuner", "gogc", d.GOGC, "active", d.Active, "reason", d.Reason)
	}
	if a.opts.CaptureDir != "" {
		var mem uint64
		if lim != nil {
			mem = lim.MemoryBytes
		}
		a.triggers = DefaultTriggers(mem)
		if a.opts.Triggers != nil {
			a.triggers = *a.opts.Triggers
			if a.triggers.Baseline <= 0 {
				a.triggers.Baseline = 12
			}
		}
		a.watch = newWatcher(a.triggers)
		a.watch.observe(a.sampler.sample()) // the origin for the first rate
		cleanStale(a.opts.CaptureDir)
		if a.opts.FlightRecorder {
			fr, err := startFlight(a.opts.FlightRecorderAge, a.opts.FlightRecorderMaxBytes)
			if err != nil {
				a.flightErr = err.Error()
				a.log.Warn("agent: no flight recorder; captures will have no trace", "err", err)
			}
			a.flight = fr
		} else {
			a.flightErr = "not requested (Options.FlightRecorder)"
		}
	}
}

func (a *Agent) loop(ctx context.Context) {
	var tuneC, watchC <-chan time.Time
	if a.tuner != nil || a.opts.SetGOMAXPROCS {
		t := time.NewTicker(a.opts.TuneInterval)
		defer t.Stop()
		tuneC = t.C
	}
	if a.watch != nil {
		t := time.NewTicker(a.opts.WatchInterval)
		defer t.Stop()
		watchC = t.C
	}
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-tuneC:
			a.retune(now)
		case <-watchC:
			a.tick(ctx, a.sampler.sample())
		}
	}
}

func (a *Agent) retune(now time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.tuner != nil {
		d := a.tuner.evaluate(now)
		if d.Applied {
			a.log.Info("agent: GOGC tuner", "gogc", d.GOGC, "previous", d.Previous, "reason", d.Reason)
		}
		a.gogc = &d
	}
	if a.opts.SetGOMAXPROCS {
		// Limits change when a pod is resized; read them again.
		if lim, err := readLimits(cgroupFiles{procCgroup: a.opts.ProcCgroup, mount: a.opts.CgroupFS}); err == nil {
			a.limits = lim
		}
		d := checkProcs(a.rt, a.limits, true, a.procsOwned)
		if d.Applied {
			a.procsOwned = true
			a.log.Info("agent: GOMAXPROCS", "from", d.GOMAXPROCS, "to", d.Recommended, "reason", d.Reason)
		}
		a.procs = d
	}
}

// tick feeds one sample to the watcher and starts a capture when it fires.
func (a *Agent) tick(ctx context.Context, s Sample) {
	a.mu.Lock()
	r, ok, fire := a.watch.observe(s)
	if ok {
		a.last = r
	}
	a.mu.Unlock()
	if fire == nil {
		return
	}
	if !a.capturing.CompareAndSwap(false, true) {
		a.log.Info("agent: trigger while a capture runs; skipped", "signal", fire.Signal, "rule", fire.Rule)
		return
	}
	a.log.Warn("agent: anomaly; capturing", "signal", fire.Signal, "value", fire.Value, "baseline", fire.Baseline, "rule", fire.Rule)
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		defer a.capturing.Store(false)
		a.runCapture(ctx, fire)
	}()
}

func (a *Agent) runCapture(ctx context.Context, t *Trigger) CaptureRecord {
	a.mu.Lock()
	lim := a.limits
	a.mu.Unlock()
	rec, err := capture(ctx, captureSpec{
		dir: a.opts.CaptureDir, cpu: a.opts.CaptureCPU, trigger: t, limits: lim,
		cpuSeconds: processCPU, rss: a.sampler.rss, flight: a.flight,
	})
	if err != nil {
		rec.Error = err.Error()
		a.log.Error("agent: capture failed", "err", err)
	} else {
		a.log.Warn("agent: captured", "dir", rec.Dir, "bytes", rec.Bytes, "partial", rec.Partial)
		removed, err := rotate(a.opts.CaptureDir, a.opts.CaptureMaxBytes, a.opts.CaptureMaxCount)
		for _, p := range removed {
			a.log.Info("agent: rotated out", "dir", p)
		}
		if err != nil {
			a.log.Error("agent: rotation", "err", err)
		}
	}
	a.mu.Lock()
	a.captures = append(a.captures, rec)
	if len(a.captures) > 50 {
		a.captures = a.captures[len(a.captures)-50:]
	}
	a.mu.Unlock()
	return rec
}

// Capture takes a bundle now, as if a trigger had fired (Signal "manual"),
// and waits for it. It fails if a capture is already running.
func (a *Agent) Capture(ctx context.Context) (CaptureRecord, error) {
	if a.opts.CaptureDir == "" {
		return CaptureRecord{}, errors.New("agent: no CaptureDir")
	}
	if !a.capturing.CompareAndSwap(false, true) {
		return CaptureRecord{}, errors.New("agent: a capture is already running")
	}
	defer a.capturing.Store(false)
	rec := a.runCapture(ctx, &Trigger{Time: time.Now(), Signal: "manual", Rule: "Agent.Capture"})
	if rec.Error != "" {
		return rec, errors.New(rec.Error)
	}
	return rec, nil
}

// Addr is the address the agent listens on, e.g. "127.0.0.1:41234".
func (a *Agent) Addr() string { return a.ln.Addr().String() }

// Close stops serving and watching, waits for a running capture to finish
// (its CPU profile is cut short), and restores the GOGC, GOMEMLIMIT and
// GOMAXPROCS settings the agent changed. It is safe to call more than once.
func (a *Agent) Close() error {
	if !a.closed.CompareAndSwap(false, true) {
		return nil
	}
	a.cancel()
	sctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	err := a.srv.Shutdown(sctx)
	if err != nil {
		err = a.srv.Close()
	}
	a.wg.Wait()
	if a.flight != nil {
		a.flight.stop()
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.tuner != nil {
		a.tuner.restore()
	}
	if a.memSet {
		a.rt.setMemoryLimit(math.MaxInt64)
	}
	if a.procsOwned && a.rt.setDefaultProc != nil {
		a.rt.setDefaultProc()
	}
	return err
}

// Status is what the agent saw and decided, served at StatusPath and under
// "agent" at bundle.MetricsPath.
type Status struct {
	Time        time.Time            `json:"time"`
	PID         int                  `json:"pid"`
	Cgroup      *Limits              `json:"cgroup,omitempty"`
	CgroupError string               `json:"cgroup_error,omitempty"`
	GOMAXPROCS  ProcsDecision        `json:"gomaxprocs"`
	MemoryLimit *MemoryLimitDecision `json:"memory_limit,omitempty"` // nil unless Options.MemoryLimit
	GOGC        *GOGCDecision        `json:"gogc,omitempty"`         // nil unless Options.GOGCTuner
	Watch       *WatchStatus         `json:"watch,omitempty"`        // nil unless Options.CaptureDir
	Flight      *FlightStatus        `json:"flight_recorder,omitempty"`
	Captures    []CaptureRecord      `json:"captures,omitempty"` // this process's, oldest first
}

// WatchStatus is the watcher's state.
type WatchStatus struct {
	Interval    time.Duration `json:"interval_ns"`
	Triggers    Triggers      `json:"triggers"`
	Last        Reading       `json:"last"`
	Baseline    Reading       `json:"baseline"` // medians of the rolling window
	LastTrigger *Trigger      `json:"last_trigger,omitempty"`
	Capturing   bool          `json:"capturing"`
	Dir         string        `json:"dir"`
}

// Status returns a copy of the agent's current state.
func (a *Agent) Status() Status {
	a.mu.Lock()
	defer a.mu.Unlock()
	st := Status{
		Time: time.Now(), PID: os.Getpid(), Cgroup: a.limits, CgroupError: a.limitsErr,
		GOMAXPROCS: a.procs, MemoryLimit: a.memLimit, GOGC: a.gogc,
		Captures: append([]CaptureRecord(nil), a.captures...),
	}
	if a.watch != nil {
		st.Watch = &WatchStatus{
			Interval: a.opts.WatchInterval, Triggers: a.triggers, Last: a.last,
			Baseline: a.watch.baselines(), LastTrigger: a.watch.lastFired,
			Capturing: a.capturing.Load(), Dir: a.opts.CaptureDir,
		}
		st.Flight = &FlightStatus{On: a.flight != nil, Error: a.flightErr}
		if a.flight != nil {
			st.Flight.MinAge, st.Flight.MaxBytes = a.opts.FlightRecorderAge, a.opts.FlightRecorderMaxBytes
		}
	}
	return st
}
