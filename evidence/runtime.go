package evidence

import (
	"strconv"
	"strings"
	"time"
)

// GCWindow is what two runtime statistics samples say about the collector
// over the window between them.
type GCWindow struct {
	Span          time.Duration
	Cycles        uint64
	CyclesPerSec  float64
	PauseTotal    time.Duration // stop-the-world time within the window
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
	w.PauseTotal, _ = b.PausesBetween(a.Time, b.Time)
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
