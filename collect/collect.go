package collect

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/perfdoctor/perfdoctor/internal/version"

	"github.com/google/pprof/profile"
	"github.com/perfdoctor/perfdoctor/bundle"
	"github.com/perfdoctor/perfdoctor/collect/perf"
	"github.com/perfdoctor/perfdoctor/collect/system"
	"github.com/perfdoctor/perfdoctor/formats/perfscript"
)

type itemKind int

const (
	kindProfile itemKind = iota // a pprof protobuf, validated by parsing
	kindTrace                   // a Go execution trace
	kindMetrics                 // heap?debug=1, kept as parsed RuntimeStats
	kindSystem                  // a /proc snapshot, local targets only
	kindPerf                    // perf stacks of a local target
	kindOffCPU                  // perf's off-CPU time of a local target
	kindText                    // served text kept as is (goroutine?debug=2)
)

// item is one thing to collect.
type item struct {
	name     string
	file     string
	kind     itemKind
	endpoint string        // under /debug/pprof/
	params   url.Values    // added to the target's query
	length   time.Duration // how long the server takes by design (profile, trace)
}

// skipError marks an item that does not apply, with the reason.
type skipError struct{ reason string }

func (e *skipError) Error() string { return e.reason }

type collector struct {
	*settings
	dir string // the bundle under construction

	mu       sync.Mutex
	items    map[string]*bundle.Item
	pid      int    // local target process, 0 if none
	notLocal string // why there is no pid
	snaps    [2]*bundle.SystemSnapshot
	phase    atomic.Int32 // 0: window, 1: end of window
}

// Collect observes the target for opt.Duration and writes a bundle to
// opt.OutDir. Collection is concurrent and tolerant: an item that fails is
// recorded in the manifest with its reason and the rest is still written.
//
// Nothing is written when the options are invalid, OutDir is not empty or
// the target does not serve pprof. Otherwise the bundle is assembled in a
// sibling directory and renamed into place after its manifest is written, so
// a directory at OutDir is always complete. The returned manifest is non-nil
// whenever a bundle was written, including with the error when every profile
// failed or when ctx was cancelled (the error then wraps ctx.Err()).
func Collect(ctx context.Context, opt Options) (*bundle.Manifest, error) {
	s, err := validate(opt)
	if err != nil {
		return nil, err
	}
	if err := bundle.CheckDestination(s.OutDir); err != nil {
		return nil, err
	}
	defer s.Progress.Clear()
	s.Progress.Update("checking %s", s.shown)
	if err := s.probe(ctx); err != nil {
		return nil, err
	}
	w, err := bundle.Create(s.OutDir)
	if err != nil {
		return nil, err
	}
	c := &collector{settings: s, dir: w.Dir(), items: map[string]*bundle.Item{}}
	c.locate(ctx)
	m := c.run(ctx)
	s.Progress.Clear()
	if err := w.Finish(m, s.OutDir); err != nil {
		return m, err
	}
	s.Logger.Info("bundle written", "dir", s.OutDir, "partial", m.Partial, "failed", len(m.Failed()))

	if ctx.Err() != nil {
		return m, fmt.Errorf("collection interrupted; partial bundle written to %s: %w", s.OutDir, ctx.Err())
	}
	if first, ok := c.allFailed(m); ok {
		return m, fmt.Errorf("no profile could be collected from %s (first failure: %s: %s); see %s",
			s.shown, first.Name, first.Error, filepath.Join(s.OutDir, bundle.ManifestFile))
	}
	return m, nil
}

// probe checks quickly that the target serves the pprof index, so a wrong
// address fails in seconds and leaves nothing behind.
func (s *settings) probe(ctx context.Context) error {
	timeout := min(probeTimeout, s.Timeout)
	body, err := s.get(ctx, s.base, timeout, 1<<20)
	if err == nil && !isPprofIndex(body) {
		what := "a page that is not the pprof index"
		if looksHTML(body) {
			what = "an HTML page that is not the pprof index"
		} else if b := strings.TrimSpace(string(body)); strings.HasPrefix(b, "{") || strings.HasPrefix(b, "[") {
			what = "JSON, not the pprof index"
		}
		return fmt.Errorf("%s does not serve Go pprof (got %s)", s.shown, what)
	}
	var se *statusError
	switch {
	case err == nil:
		return nil
	case ctx.Err() != nil:
		return fmt.Errorf("checking %s: %w", s.shown, ctx.Err())
	case errors.As(err, &se):
		return fmt.Errorf("%s does not serve Go pprof (got %s)", s.shown, se.status)
	}
	return fmt.Errorf("target %s is unreachable: %w", s.shown, err)
}

// locate finds the target's process when it runs on this machine.
func (c *collector) locate(ctx context.Context) {
	host := c.base.Hostname()
	port, _ := strconv.Atoi(c.base.Port())
	if port == 0 {
		port = map[string]int{"http": 80, "https": 443}[c.base.Scheme]
	}
	if !isLocalHost(ctx, host) {
		c.notLocal = "target host " + host + " is not this machine"
		return
	}
	pid, err := system.FindPIDByPort(c.Roots, port)
	if err != nil {
		c.notLocal = err.Error()
		c.Logger.Info("no local process for target", "port", port, "err", err)
		return
	}
	c.pid = pid
	c.Logger.Info("target is local", "pid", pid)
}

func isLocalHost(ctx context.Context, host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	var ips []net.IP
	if ip := net.ParseIP(host); ip != nil {
		ips = append(ips, ip)
	} else {
		rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		addrs, err := net.DefaultResolver.LookupIPAddr(rctx, host)
		if err != nil {
			return false
		}
		for _, a := range addrs {
			ips = append(ips, a.IP)
		}
	}
	ifAddrs, _ := net.InterfaceAddrs()
	for _, ip := range ips {
		if ip.IsLoopback() || ip.IsUnspecified() {
			return true
		}
		for _, a := range ifAddrs {
			if n, ok := a.(*net.IPNet); ok && n.IP.Equal(ip) {
				return true
			}
		}
	}
	return false
}

// seconds is the window parameter of net/http/pprof's profiles, which take
// whole seconds (the trace takes fractions).
func seconds(d time.Duration) url.Values {
	return url.Values{"seconds": {strconv.FormatInt(max(int64(d.Round(time.Second)/time.Second), 1), 10)}}
}

// run collects everything into c.dir and returns the manifest.
func (c *collector) run(ctx context.Context) *bundle.Manifest {
	debug1 := url.Values{"debug": {"1"}}
	var (
		cpu          = item{name: "cpu", file: bundle.CPUFile, kind: kindProfile, endpoint: "profile", params: seconds(c.window), length: c.window}
		trace        = item{name: "trace", file: bundle.TraceFile, kind: kindTrace, endpoint: "trace", params: url.Values{"seconds": {strconv.FormatFloat(c.trace.Seconds(), 'f', -1, 64)}}, length: c.trace}
		heapStart    = item{name: "heap-start", file: bundle.HeapStartFile, kind: kindProfile, endpoint: "heap"}
		metricsStart = item{name: "metrics-start", file: bundle.MetricsStartFile, kind: kindMetrics, endpoint: "heap", params: debug1}
		systemStart  = item{name: "system-start", file: bundle.SystemStartFile, kind: kindSystem}
		// Goroutines at both ends tell growth by stack; the leak profile
		// (where served) is the runtime's proof of goroutines blocked forever.
		goroutineStart = item{name: "goroutine-start", file: bundle.GoroutineStartFile, kind: kindProfile, endpoint: "goroutine"}
		goroutineLeak  = item{name: "goroutineleak", file: bundle.GoroutineLeakFile, kind: kindProfile, endpoint: "goroutineleak"}
		goroutineText  = item{name: "goroutine-stacks", file: bundle.GoroutineStackFile, kind: kindText, endpoint: "goroutine", params: url.Values{"debug": {"2"}}}
		// Lock profiles count from process start; over the window (the
		// handler's delta) they give a rate of contention for any target.
		locks = []item{
			{name: "mutex", file: bundle.MutexFile, kind: kindProfile, endpoint: "mutex", params: seconds(c.window), length: c.window},
			{name: "block", file: bundle.BlockFile, kind: kindProfile, endpoint: "block", params: seconds(c.window), length: c.window},
		}
		end = []item{
			{name: "heap", file: bundle.HeapFile, kind: kindProfile, endpoint: "heap"},
			{name: "allocs", file: bundle.AllocsFile, kind: kindProfile, endpoint: "allocs"},
			{name: "goroutine", file: bundle.GoroutineFile, kind: kindProfile, endpoint: "goroutine"},
			{name: "metrics-end", file: bundle.MetricsEndFile, kind: kindMetrics, endpoint: "heap", params: debug1},
			{name: "system-end", file: bundle.SystemEndFile, kind: kindSystem},
		}
	)
	series := c.heapSeries()
	end = append(end, goroutineLeak)
	order := []item{cpu, trace, heapStart, end[0], end[1], end[2], locks[0], locks[1], metricsStart, end[3], systemStart, end[4], goroutineStart, goroutineLeak, goroutineText}
	order = append(order, series...)
	perfItem := item{name: "perf", file: bundle.PerfFile, kind: kindPerf, length: c.window}
	offCPUItem := item{name: "offcpu", file: bundle.OffCPUFile, kind: kindOffCPU, length: c.window}
	if c.Perf {
		order = append(order, perfItem, offCPUItem)
	}
	for _, it := range order {
		c.items[it.name] = &bundle.Item{Name: it.name}
	}

	start := time.Now()
	var wg sync.WaitGroup
	stopProgress := c.showProgress(start)
	defer stopProgress()

	cpuDone := make(chan struct{})
	wg.Go(func() {
		defer close(cpuDone)
		c.do(ctx, cpu)
	})
	if c.trace > 0 {
		// The trace covers the end of the window, where the CPU profile is too.
		wg.Go(func() {
			if sleep(ctx, c.window-c.trace) {
				c.do(ctx, trace)
			}
		})
	} else {
		c.skip("trace", "disabled")
	}
	wg.Go(func() { c.do(ctx, metricsStart) })
	wg.Go(func() { c.do(ctx, goroutineStart) })
	for _, it := range locks {
		wg.Go(func() { c.do(ctx, it) })
	}
	if c.Perf {
		wg.Go(func() { c.do(ctx, perfItem) })
		wg.Go(func() { c.do(ctx, offCPUItem) })
	}
	if len(series) > 0 {
		wg.Go(func() {
			for i, it := range series {
				if !sleep(ctx, time.Until(start.Add(time.Duration(i+1)*c.HeapEvery))) {
					return
				}
				c.do(ctx, it)
			}
		})
	}
	wg.Go(func() {
		// heap-start first: its mappings tell whether the local process
		// found by port is really the program being profiled.
		if p := c.do(ctx, heapStart); p != nil {
			c.confirmLocal(p)
		}
		c.do(ctx, systemStart)
	})

	// The end-of-window items wait for both the CPU profile and the window,
	// so a CPU profile that fails early still leaves a window to measure.
	// (Own copies: the CPU goroutine still closes cpuDone after a cancel.)
	waitCPU, waitWindow := cpuDone, time.After(c.window)
	for waitCPU != nil || waitWindow != nil {
		select {
		case <-waitCPU:
			waitCPU = nil
		case <-waitWindow:
			waitWindow = nil
		case <-ctx.Done():
			waitCPU, waitWindow = nil, nil
		}
	}
	c.phase.Store(1)
	if ctx.Err() == nil {
		for _, it := range end {
			if it.name != "goroutine" {
				wg.Go(func() { c.do(ctx, it) })
				continue
			}
			// The dump stops the world while it writes every stack: take
			// it only when the goroutine count says that is brief.
			wg.Go(func() {
				n, ok := goroutineCount(c.do(ctx, it))
				switch {
				case !ok:
					c.skip(goroutineText.name, "no goroutine profile to size it by")
				case n > maxDumpGoroutines:
					c.skip(goroutineText.name, fmt.Sprintf("%d goroutines: a debug=2 dump would stop the target too long (limit %d)", n, maxDumpGoroutines))
				default:
					c.do(ctx, goroutineText)
				}
			})
		}
	}
	wg.Wait()

	m := &bundle.Manifest{
		FormatVersion: bundle.FormatVersion,
		Tool:          version.Tool(),
		Target:        c.shown,
		Start:         start,
		End:           time.Now(),
		Duration:      bundle.Duration(c.window),
		PID:           c.pid,
		Runtime:       c.runtimeInfo(),
	}
	for _, it := range order {
		mi := *c.items[it.name]
		if mi.Status == "" { // never started: cut off by cancellation
			mi.Status, mi.Error = bundle.StatusFailed, errInterrupted.Error()
		}
		m.Items = append(m.Items, mi)
	}
	m.Partial = len(m.Failed()) > 0
	return m
}

// maxDumpGoroutines bounds the goroutine dump: writing every stack stops
// the target's world throughout, 25 µs a goroutine on a loaded 2-core
// machine (5 000 goroutines: 123 ms). Beyond it the execution trace still
// names the go statements of goroutines it saw created.
const maxDumpGoroutines = 10_000

// goroutineCount is how many goroutines a goroutine profile holds.
func goroutineCount(p *profile.Profile) (int64, bool) {
	if p == nil {
		return 0, false
	}
	var n int64
	for _, s := range p.Sample {
		if len(s.Value) > 0 {
			n += s.Value[0]
		}
	}
	return n, true
}

// sleep waits d or until ctx is done, reporting whether d elapsed.
func sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// do collects one item and records its fate. For profiles it returns the
// parsed profile.
func (c *collector) do(ctx context.Context, it item) *profile.Profile {
	c.mu.Lock()
	c.items[it.name].Status = "running"
	c.mu.Unlock()
	t0 := time.Now()
	n, p, err := c.produce(ctx, it)
	d := time.Since(t0)

	c.mu.Lock()
	defer c.mu.Unlock()
	mi := c.items[it.name]
	mi.Duration = bundle.Duration(d.Round(time.Millisecond))
	var skip *skipError
	switch {
	case err == nil:
		mi.Status, mi.File, mi.Bytes = bundle.StatusOK, it.file, n
		c.Logger.Debug("collected", "item", it.name, "bytes", n, "took", d)
	case errors.As(err, &skip):
		mi.Status, mi.Error = bundle.StatusSkipped, skip.reason
		c.Logger.Debug("skipped", "item", it.name, "reason", skip.reason)
	case errors.Is(err, errInterrupted):
		mi.Status, mi.Error = bundle.StatusFailed, errInterrupted.Error()
	default:
		mi.Status, mi.Error = bundle.StatusFailed, err.Error()
		c.Logger.Warn("item failed", "item", it.name, "err", err.Error())
	}
	return p
}

func (c *collector) skip(name, reason string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.items[name].Status, c.items[name].Error = bundle.StatusSkipped, reason
}

// produce fetches, validates and writes one item, returning its size.
func (c *collector) produce(ctx context.Context, it item) (int64, *profile.Profile, error) {
	path := filepath.Join(c.dir, it.file)
	switch it.kind {
	case kindSystem:
		return c.snapshot(it, path)
	case kindPerf:
		return c.recordPerf(ctx, it, path)
	case kindOffCPU:
		return c.recordOffCPU(ctx, it, path)
	case kindMetrics:
		st, err := c.runtimeStats(ctx, it)
		if err != nil {
			return 0, nil, err
		}
		return writeJSON(path, st)
	}
	started := time.Now()
	f, err := c.fetchItem(ctx, it)
	c.annotate(it.name, f.attempts, f.note(it))
	var se *statusError
	if it.endpoint == "goroutineleak" && errors.As(err, &se) && strings.HasPrefix(se.status, "404") {
		return 0, nil, &skipError{"the target does not serve goroutineleak (Go >= 1.27, or 1.26 built with GOEXPERIMENT=goroutineleakprofile)"}
	}
	if err != nil {
		return 0, nil, err
	}
	body := f.body
	var p *profile.Profile
	switch it.kind {
	case kindProfile:
		if p, err = parseProfile(body); err != nil {
			return 0, nil, err
		}
		if it.length > 0 {
			covered := time.Duration(p.DurationNanos)
			switch {
			case deltaProfile[it.endpoint] && covered < f.asked/2:
				// Counts since the process started, not over the window:
				// the server ignored seconds. Two snapshots make the window.
				return c.twoSnapshots(ctx, it, path, p, started.Add(it.length))
			case covered > 0 && covered < f.asked/2:
				c.addNote(it.name, fmt.Sprintf("covers %s of the %s asked for: the server ignored seconds", covered.Round(100*time.Millisecond), f.asked))
			}
		}
	case kindTrace:
		if err := checkTrace(body); err != nil {
			return 0, nil, err
		}
	case kindText:
		if !bytes.HasPrefix(body, []byte("goroutine ")) {
			return 0, nil, fmt.Errorf("%s did not serve a goroutine dump", it.endpoint)
		}
	}
	// The original bytes are kept: `go tool pprof` reads them as served.
	if err := bundle.WriteFileAtomic(path, body); err != nil {
		return 0, nil, err // it names the file
	}
	return int64(len(body)), p, nil
}

func (c *collector) snapshot(it item, path string) (int64, *profile.Profile, error) {
	c.mu.Lock()
	pid, why := c.pid, c.notLocal
	c.mu.Unlock()
	if pid == 0 {
		return 0, nil, &skipError{why}
	}
	snap, err := system.Snapshot(c.Roots, pid)
	if err != nil {
		return 0, nil, err
	}
	for _, e := range snap.Errors {
		c.Logger.Debug("system snapshot incomplete", "item", it.name, "err", e)
	}
	c.mu.Lock()
	if it.name == "system-start" {
		c.snaps[0] = snap
	} else {
		c.snaps[1] = snap
	}
	c.mu.Unlock()
	return writeJSON(path, snap)
}

// recordPerf records the local target with perf over the window.
func (c *collector) recordPerf(ctx context.Context, it item, path string) (int64, *profile.Profile, error) {
	c.mu.Lock()
	pid, why := c.pid, c.notLocal
	c.mu.Unlock()
	if pid == 0 {
		return 0, nil, &skipError{"perf needs a local target: " + why}
	}
	p, err := perf.Record(ctx, perf.Options{PID: pid, Duration: it.length, Perf: c.PerfPath, Logger: c.Logger})
	if errors.Is(err, perf.ErrNoSamples) {
		return 0, nil, &skipError{err.Error()}
	}
	if err != nil {
		return 0, nil, err
	}
	n, err := bundle.WriteProfile(path, p)
	return n, p, err
}

// recordOffCPU records the local target's off-CPU time with perf's
// scheduler tracepoints over the window; where they are refused, the item
// is skipped with the one-line reason.
func (c *collector) recordOffCPU(ctx context.Context, it item, path string) (int64, *profile.Profile, error) {
	c.mu.Lock()
	pid, why := c.pid, c.notLocal
	c.mu.Unlock()
	if pid == 0 {
		return 0, nil, &skipError{"perf needs a local target: " + why}
	}
	p, err := perf.RecordOffCPU(ctx, perf.Options{PID: pid, Duration: it.length, Perf: c.PerfPath, Logger: c.Logger})
	if errors.Is(err, perf.ErrSchedNotPermitted) || errors.Is(err, perf.ErrNoSamples) || errors.Is(err, perf.ErrNotInstalled) {
		return 0, nil, &skipError{err.Error()}
	}
	if err != nil {
		return 0, nil, err
	}
	if why := perfscript.OffCPUIncomplete(p); why != "" {
		c.addNote(it.name, why)
	}
	n, err := bundle.WriteProfile(path, p)
	return n, p, err
}

func writeJSON(path string, v any) (int64, *profile.Profile, error) {
	if err := bundle.WriteJSONAtomic(path, v); err != nil {
		return 0, nil, err // it names the file
	}
	st, err := os.Stat(path)
	if err != nil {
		return 0, nil, err
	}
	return st.Size(), nil, nil
}

// confirmLocal drops the local process found by port when the profiled
// program is another executable: a port forward (kubectl, ssh) or a proxy
// owns the port then, and its /proc would describe the wrong process.
func (c *collector) confirmLocal(p *profile.Profile) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.pid == 0 {
		return
	}
	exe, err := system.Executable(c.Roots, c.pid)
	if err != nil || exe == "" {
		return
	}
	want := filepath.Base(exe)
	seen := ""
	for _, m := range p.Mapping {
		if m.File == "" || strings.HasPrefix(m.File, "[") {
			continue
		}
		f := filepath.Base(strings.TrimSuffix(m.File, " (deleted)"))
		if f == want {
			return
		}
		if seen == "" {
			seen = f
		}
	}
	if seen == "" {
		return // no mappings to compare: trust the port
	}
	c.notLocal = fmt.Sprintf("the local port belongs to pid %d (%s), not to the profiled program (%s): a port forward or proxy?", c.pid, want, seen)
	c.Logger.Warn("local process does not match target", "pid", c.pid, "exe", want, "profiled", seen)
	c.pid = 0
}

// runtimeInfo records what is known of the target's Go settings.
func (c *collector) runtimeInfo() bundle.RuntimeInfo {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.pid == 0 {
		return bundle.RuntimeInfo{Source: "not known: " + c.notLocal}
	}
	var proc *bundle.ProcessInfo
	for _, s := range c.snaps {
		if s != nil && s.Process != nil {
			proc = s.Process
		}
	}
	if proc == nil {
		ri := bundle.RuntimeInfo{Source: fmt.Sprintf("local pid %d: environment not readable", c.pid)}
		if bi, err := system.BuildInfo(c.Roots, c.pid); err == nil {
			ri.GoVersion = bi.GoVersion
			ri.Source += "; Go version from the executable's build info"
		}
		return ri
	}
	ri := bundle.RuntimeInfo{
		GoVersion:  proc.GoVersion,
		GOGC:       proc.GoEnv["GOGC"],
		GOMEMLIMIT: proc.GoEnv["GOMEMLIMIT"],
		Source:     fmt.Sprintf("local pid %d: environment at exec (unset = runtime default) and the executable's build info", c.pid),
	}
	if n, err := strconv.Atoi(proc.GoEnv["GOMAXPROCS"]); err == nil && n > 0 {
		ri.GOMAXPROCS = n
	}
	return ri
}

// allFailed reports whether no item from the target succeeded, and the first failure.
func (c *collector) allFailed(m *bundle.Manifest) (bundle.Item, bool) {
	var first bundle.Item
	for _, it := range m.Items {
		if strings.HasPrefix(it.Name, "system-") || it.Name == "perf" || it.Name == "offcpu" {
			continue
		}
		switch it.Status {
		case bundle.StatusOK:
			return bundle.Item{}, false
		case bundle.StatusFailed:
			if first.Name == "" {
				first = it
			}
		}
	}
	return first, first.Name != ""
}

// showProgress updates the status line every second until the returned stop is called.
func (c *collector) showProgress(start time.Time) (stop func()) {
	if !c.Progress.Active() {
		return func() {}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			c.Progress.Update("%s", c.status(time.Since(start)))
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	})
	return func() { close(done); wg.Wait() }
}

// status is the progress line: the window's clock, then each started item.
func (c *collector) status(elapsed time.Duration) string {
	var b strings.Builder
	if c.phase.Load() == 0 {
		fmt.Fprintf(&b, "collecting cpu profile %ds/%ds", int(min(elapsed, c.window).Seconds()), int(c.window.Seconds()))
	} else {
		b.WriteString("collecting end-of-window profiles")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	var parts []string
	for _, name := range []string{"trace", "heap-start", "metrics-start", "system-start", "heap", "allocs", "goroutine", "mutex", "block", "metrics-end", "system-end"} {
		switch st := c.items[name].Status; st {
		case "":
		case "running":
			parts = append(parts, name+" ...")
		default:
			parts = append(parts, name+" "+st)
		}
	}
	if len(parts) > 0 {
		b.WriteString("  (" + strings.Join(parts, ", ") + ")")
	}
	return b.String()
}
