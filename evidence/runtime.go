package evidence

import (
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/perfdoctor/perfdoctor/bundle"
)

// GCWindow is what two runtime statistics samples say about the collector
// over the window between them.
type GCWindow struct {
	Span          time.Duration
	Cycles        uint64
	CyclesPerSec  float64
	PauseTotal    time.Duration // stop-the-world time within the window
	PauseMax      time.Duration // the longest pause that ended in the window
	Pauses        int           // pauses that ended in the window
	AllocBytesSec float64
	AllocObjsSec  float64
	HeapAlloc     uint64 // at the end
	NextGC        uint64 // at the end
}

// GC returns the collector's activity over the window, or false when the
// evidence lacks a start and end sample.
func (e *Evidence) GC() (GCWindow, bool) {
	a, b := e.MetricsStart, e.MetricsEnd
	if a == nil || b == nil || !b.Time.After(a.Time) || b.NumGC < a.NumGC {
		return GCWindow{}, false
	}
	span := b.Time.Sub(a.Time)
	secs := span.Seconds()
	w := GCWindow{
		Span:          span,
		Cycles:        b.NumGC - a.NumGC,
		AllocBytesSec: float64(b.TotalAlloc-min(a.TotalAlloc, b.TotalAlloc)) / secs,
		AllocObjsSec:  float64(b.Mallocs-min(a.Mallocs, b.Mallocs)) / secs,
		HeapAlloc:     b.HeapAlloc,
		NextGC:        b.NextGC,
	}
	w.CyclesPerSec = float64(w.Cycles) / secs
	for _, p := range b.PausesSince(a) {
		w.Pauses++
		w.PauseTotal += time.Duration(p.Ns)
		w.PauseMax = max(w.PauseMax, time.Duration(p.Ns))
	}
	return w, true
}

// Settings is the target's GC and scheduler configuration as far as the
// evidence shows it. Zero values mean unknown; Source says where values came from.
type Settings struct {
	GOGC          int    // percent; -1 = off; 0 = unknown
	GOMEMLIMIT    uint64 // bytes; 0 = unknown or unset
	GOMAXPROCS    int
	GoVersion     string
	NumCPU        int     // CPUs the process may run on
	CPUQuota      float64 // cores; 0 = no quota or unknown
	MemoryLimit   uint64  // cgroup limit in bytes; 0 = none or unknown
	MemTotal      uint64
	GOMAXPROCSSrc string // "env", "inferred from Go version and limits", ...
}

// Settings gathers configuration from the manifest and system snapshots.
// GOMAXPROCS not set in the environment is inferred: since Go 1.25 the
// runtime defaults it to the cgroup CPU limit, before that to the CPU count.
func (e *Evidence) Settings() Settings {
	var s Settings
	snap := e.SystemEnd
	if snap == nil {
		snap = e.SystemStart
	}
	if snap != nil {
		s.NumCPU = snap.Machine.NumCPU
		s.MemTotal = snap.Machine.MemTotalBytes
		if p := snap.Process; p != nil {
			if p.CPUsAllowed > 0 {
				s.NumCPU = p.CPUsAllowed
			}
			s.GoVersion = p.GoVersion
			s.GOGC = parseGOGC(p.GoEnv["GOGC"])
			s.GOMEMLIMIT = parseBytes(p.GoEnv["GOMEMLIMIT"])
			if n, err := strconv.Atoi(p.GoEnv["GOMAXPROCS"]); err == nil && n > 0 {
				s.GOMAXPROCS, s.GOMAXPROCSSrc = n, "GOMAXPROCS environment variable"
			}
		}
		if c := snap.Cgroup; c != nil {
			s.CPUQuota = c.CPUQuotaCores
			s.MemoryLimit = c.MemoryLimitBytes
		}
	}
	if m := e.Manifest; m != nil {
		if s.GoVersion == "" {
			s.GoVersion = m.Runtime.GoVersion
		}
		if s.GOMAXPROCS == 0 && m.Runtime.GOMAXPROCS > 0 {
			s.GOMAXPROCS, s.GOMAXPROCSSrc = m.Runtime.GOMAXPROCS, "manifest ("+m.Runtime.Source+")"
		}
		if s.GOGC == 0 {
			s.GOGC = parseGOGC(m.Runtime.GOGC)
		}
	}
	// The runtime's own values win over the environment's: code
	// (debug.SetGCPercent, SetMemoryLimit, the agent's tuner) may have
	// changed them since the process started.
	if m := e.MetricsEnd; m != nil && m.Runtime != nil {
		rm := m.Runtime
		if s.GoVersion == "" {
			s.GoVersion = rm.GoVersion
		}
		if rm.GOMAXPROCS > 0 {
			s.GOMAXPROCS, s.GOMAXPROCSSrc = rm.GOMAXPROCS, "runtime/metrics"
		}
		if rm.GOGC != 0 {
			s.GOGC = rm.GOGC
		}
		if rm.GOMEMLIMIT > 0 && rm.GOMEMLIMIT < math.MaxInt64 {
			s.GOMEMLIMIT = uint64(rm.GOMEMLIMIT)
		}
	}
	if t := e.GCTrace; t != nil && s.GOMAXPROCS == 0 && t.Procs > 0 {
		s.GOMAXPROCS, s.GOMAXPROCSSrc = t.Procs, "gctrace"
	}
	if s.GOGC == 0 && snap != nil && snap.Process != nil {
		s.GOGC = 100 // the process environment was read and GOGC is unset
	}
	if s.GOMAXPROCS == 0 && s.NumCPU > 0 {
		s.GOMAXPROCS = s.NumCPU
		s.GOMAXPROCSSrc = "inferred: CPU count"
		if s.CPUQuota > 0 && goAtLeast(s.GoVersion, 25) {
			q := int(s.CPUQuota + 0.999)
			s.GOMAXPROCS = min(s.NumCPU, max(2, q))
			s.GOMAXPROCSSrc = "inferred: Go >= 1.25 follows the cgroup CPU limit"
		}
	}
	return s
}

func parseGOGC(v string) int {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "":
		return 0
	case "off":
		return -1
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		return 0
	}
	return n
}

// parseBytes reads GOMEMLIMIT syntax: a number with an optional B, KiB, MiB,
// GiB or TiB suffix.
func parseBytes(v string) uint64 {
	v = strings.TrimSpace(v)
	mult := uint64(1)
	for _, u := range []struct {
		suffix string
		mult   uint64
	}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}, {"B", 1}} {
		if strings.HasSuffix(v, u.suffix) {
			v, mult = strings.TrimSuffix(v, u.suffix), u.mult
			break
		}
	}
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		return 0
	}
	return n * mult
}

// goAtLeast reports whether a version like "go1.26.8" is at least 1.minor.
// An unknown version is taken as current.
func goAtLeast(version string, minor int) bool {
	rest, ok := strings.CutPrefix(version, "go1.")
	if !ok {
		return true
	}
	digits := rest
	if i := strings.IndexFunc(rest, func(r rune) bool { return r < '0' || r > '9' }); i >= 0 {
		digits = rest[:i]
	}
	n, err := strconv.Atoi(digits)
	return err != nil || n >= minor
}

// Build is the target's build information: from its executable (a local
// target) or from the agent's metrics (a remote one); nil when unknown.
func (e *Evidence) Build() *bundle.BuildInfo {
	for _, snap := range []*bundle.SystemSnapshot{e.SystemEnd, e.SystemStart} {
		if snap != nil && snap.Process != nil && snap.Process.Build != nil {
			return snap.Process.Build
		}
	}
	for _, m := range []*bundle.RuntimeStats{e.MetricsEnd, e.MetricsStart} {
		if m != nil && m.Runtime != nil && m.Runtime.Build != nil {
			return m.Runtime.Build
		}
	}
	return nil
}

// runtime/metrics names the evidence reads.
const (
	MetricGCCycles       = "/gc/cycles/total:gc-cycles"
	MetricGCCPU          = "/cpu/classes/gc/total:cpu-seconds"
	MetricTotalCPU       = "/cpu/classes/total:cpu-seconds"
	MetricIdleCPU        = "/cpu/classes/idle:cpu-seconds"
	MetricAssistCPU      = "/cpu/classes/gc/mark/assist:cpu-seconds"
	MetricSchedLatencies = "/sched/latencies:seconds"
	MetricGCPauses       = "/sched/pauses/total/gc:seconds"
	MetricHeapLive       = "/gc/heap/live:bytes"
	MetricGOMEMLIMIT     = "/gc/gomemlimit:bytes"
	MetricGOGC           = "/gc/gogc:percent"
	MetricGoroutines     = "/sched/goroutines:goroutines"
	MetricGoroutinesMade = "/sched/goroutines-created:goroutines" // Go >= 1.26
	MetricHeapAllocs     = "/gc/heap/allocs:bytes"
	// Go >= 1.26: goroutines by state and the threads the runtime owns.
	MetricGoroutinesRunnable = "/sched/goroutines/runnable:goroutines"
	MetricGoroutinesWaiting  = "/sched/goroutines/waiting:goroutines"
	MetricGoroutinesNotInGo  = "/sched/goroutines/not-in-go:goroutines"
	MetricThreads            = "/sched/threads/total:threads"
)

// RuntimeWindow is what two runtime/metrics snapshots (served by the agent)
// say about the window between them. Fields whose metric is absent from
// either snapshot are zero; Has tells them apart.
type RuntimeWindow struct {
	Span     time.Duration
	GCCycles float64 // cycles completed in the window
	// GCShare is the exact GC CPU share of the CPU the process used
	// (gc / (total - idle)); GCShareOfAvailable is of all CPU available
	// to it (gc / total, total = wall time × GOMAXPROCS).
	GCShare, GCShareOfAvailable float64
	AssistShare                 float64 // mark assists over the CPU used
	// SchedLatency is the runnable-to-running delay of goroutines
	// scheduled in the window: its p99 (a bucket's upper bound) and count.
	SchedLatencyP99   time.Duration
	SchedLatencyP50   time.Duration
	SchedLatencyCount uint64
	GCPauseP99        time.Duration // stop-the-world pauses for GC
	GCPauses          uint64
	HeapLive          uint64 // at the end
	GOMEMLIMIT        int64  // at the end; math.MaxInt64 = none
	GOGC              int    // at the end; -1 = off
	GoroutinesStart   float64
	GoroutinesEnd     float64
	GoroutinesCreated float64 // in the window (Go >= 1.26)
	AllocBytes        float64 // allocated in the window
	// At the end of the window (Go >= 1.26): goroutines waiting for a P,
	// parked, in system calls or cgo, and the runtime's threads.
	Runnable, Waiting, NotInGo, Threads float64

	has map[string]bool
}

// Has reports whether the named metric was in both snapshots (histograms:
// in the end snapshot and, for deltas, the start one).
func (w RuntimeWindow) Has(name string) bool { return w.has[name] }

// RuntimeMetrics returns the start and end runtime/metrics snapshots, when
// both samples carry one.
func (e *Evidence) RuntimeMetrics() (start, end *bundle.RuntimeMetrics, ok bool) {
	if e.MetricsStart == nil || e.MetricsEnd == nil || e.MetricsStart.Runtime == nil || e.MetricsEnd.Runtime == nil {
		return nil, nil, false
	}
	return e.MetricsStart.Runtime, e.MetricsEnd.Runtime, true
}

// RuntimeDelta is how much a cumulative runtime/metrics scalar grew over
// the window.
func (e *Evidence) RuntimeDelta(name string) (float64, bool) {
	a, b, ok := e.RuntimeMetrics()
	if !ok {
		return 0, false
	}
	va, oka := a.Values[name]
	vb, okb := b.Values[name]
	if !oka || !okb || vb < va {
		return 0, false
	}
	return vb - va, true
}

// Runtime returns the window's figures from the runtime/metrics snapshots,
// or false when the evidence lacks them at either end.
func (e *Evidence) Runtime() (RuntimeWindow, bool) {
	a, b, ok := e.RuntimeMetrics()
	if !ok || !b.Time.After(a.Time) {
		return RuntimeWindow{}, false
	}
	w := RuntimeWindow{Span: b.Time.Sub(a.Time), has: map[string]bool{}, GOGC: b.GOGC, GOMEMLIMIT: b.GOMEMLIMIT}
	delta := func(name string) float64 {
		v, ok := e.RuntimeDelta(name)
		if ok {
			w.has[name] = true
		}
		return v
	}
	end := func(name string) float64 {
		v, ok := b.Values[name]
		if ok {
			w.has[name] = true
		}
		return v
	}
	w.GCCycles = delta(MetricGCCycles)
	gc, total, idle, assist := delta(MetricGCCPU), delta(MetricTotalCPU), delta(MetricIdleCPU), delta(MetricAssistCPU)
	if used := total - idle; w.has[MetricGCCPU] && w.has[MetricTotalCPU] && used > 0 {
		w.GCShare = min(gc/used, 1)
		w.AssistShare = min(assist/used, 1)
	}
	if total > 0 {
		w.GCShareOfAvailable = min(gc/total, 1)
	}
	w.AllocBytes = delta(MetricHeapAllocs)
	w.GoroutinesCreated = delta(MetricGoroutinesMade)
	w.HeapLive = uint64(end(MetricHeapLive))
	if v, ok := b.Values[MetricGOMEMLIMIT]; ok {
		w.GOMEMLIMIT, w.has[MetricGOMEMLIMIT] = int64(min(v, math.MaxInt64)), true
	}
	if v, ok := b.Values[MetricGOGC]; ok {
		w.GOGC, w.has[MetricGOGC] = int(v), true
		if v <= 0 {
			w.GOGC = -1 // /gc/gogc:percent reads 0 when GOGC=off
		}
	}
	w.GoroutinesEnd = end(MetricGoroutines)
	w.Runnable, w.Waiting = end(MetricGoroutinesRunnable), end(MetricGoroutinesWaiting)
	w.NotInGo, w.Threads = end(MetricGoroutinesNotInGo), end(MetricThreads)
	if v, ok := a.Values[MetricGoroutines]; ok {
		w.GoroutinesStart = v
	}
	hdelta := func(name string) (bundle.Histogram, bool) {
		hb, okb := b.Histograms[name]
		if !okb {
			return bundle.Histogram{}, false
		}
		w.has[name] = true
		if ha, oka := a.Histograms[name]; oka {
			return hb.Sub(ha), true
		}
		return hb, true
	}
	if h, ok := hdelta(MetricSchedLatencies); ok {
		w.SchedLatencyP99 = seconds(h.Quantile(0.99))
		w.SchedLatencyP50 = seconds(h.Quantile(0.50))
		for _, c := range h.Counts {
			w.SchedLatencyCount += c
		}
	}
	if h, ok := hdelta(MetricGCPauses); ok {
		w.GCPauseP99 = seconds(h.Quantile(0.99))
		for _, c := range h.Counts {
			w.GCPauses += c
		}
	}
	return w, true
}

func seconds(v float64) time.Duration {
	if v <= 0 || math.IsNaN(v) {
		return 0
	}
	return time.Duration(min(v, 1e6) * float64(time.Second))
}
