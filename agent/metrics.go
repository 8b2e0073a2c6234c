package agent

import (
	"math"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"time"

	"github.com/perfdoctor/perfdoctor/bundle"
)

// Runtime metric names the agent reads on its own.
const (
	mGCCPU      = "/cpu/classes/gc/total:cpu-seconds"
	mTotalCPU   = "/cpu/classes/total:cpu-seconds"
	mGoroutines = "/sched/goroutines:goroutines"
	mHeapLive   = "/gc/heap/live:bytes"
	mGOGC       = "/gc/gogc:percent"
	mGOMEMLIMIT = "/gc/gomemlimit:bytes"
	mMemTotal   = "/memory/classes/total:bytes"
	mMemFree    = "/memory/classes/heap/released:bytes"
)

// Snapshot reads every runtime/metrics sample and the runtime settings into
// the JSON shape served at bundle.MetricsPath. GOGC and GOMEMLIMIT are read
// back without side effects: from /gc/gogc:percent (the runtime's own
// record; debug.SetGCPercent(-1) would wait for a running mark phase) and
// debug.SetMemoryLimit(-1), which only reads.
func Snapshot() *bundle.RuntimeMetrics {
	descs := metrics.All()
	samples := make([]metrics.Sample, len(descs))
	for i, d := range descs {
		samples[i].Name = d.Name
	}
	metrics.Read(samples)
	m := &bundle.RuntimeMetrics{
		Time:       time.Now(),
		Values:     make(map[string]float64, len(samples)),
		Histograms: map[string]bundle.Histogram{},
		GoVersion:  runtime.Version(),
		GOMAXPROCS: runtime.GOMAXPROCS(0),
		GOGC:       100,
		GOMEMLIMIT: debug.SetMemoryLimit(-1),
		Build:      ownBuild(),
	}
	for _, s := range samples {
		switch s.Value.Kind() {
		case metrics.KindUint64:
			m.Values[s.Name] = float64(s.Value.Uint64())
			if s.Name == mGOGC {
				m.GOGC = gogcFromMetric(s.Value.Uint64())
			}
		case metrics.KindFloat64:
			m.Values[s.Name] = s.Value.Float64()
		case metrics.KindFloat64Histogram:
			h := s.Value.Float64Histogram()
			b := make([]float64, len(h.Buckets))
			for i, v := range h.Buckets {
				b[i] = finite(v)
			}
			m.Histograms[s.Name] = bundle.Histogram{Buckets: b, Counts: append([]uint64(nil), h.Counts...)}
		}
	}
	return m
}

// ownBuild is this program's build information, read once.
var ownBuild = sync.OnceValue(func() *bundle.BuildInfo {
	bi, _ := debug.ReadBuildInfo()
	return bundle.NewBuildInfo(bi, "agent")
})

// gogcFromMetric converts /gc/gogc:percent, where GOGC=off (-1) shows as a
// wrapped uint64.
func gogcFromMetric(v uint64) int {
	if v > math.MaxInt32 {
		return -1
	}
	return int(v)
}

// finite maps ±Inf to ±MaxFloat64, since JSON has no infinity.
func finite(v float64) float64 {
	switch {
	case math.IsInf(v, 1):
		return math.MaxFloat64
	case math.IsInf(v, -1):
		return -math.MaxFloat64
	}
	return v
}

// currentGOGC reads GOGC without changing it.
func currentGOGC() int {
	s := []metrics.Sample{{Name: mGOGC}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 100
	}
	return gogcFromMetric(s[0].Value.Uint64())
}

// memStats fills bundle.RuntimeStats from runtime.MemStats (a brief
// stop-the-world, so only at captures) and attaches the metrics snapshot.
func memStats(maxRSS uint64) *bundle.RuntimeStats {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	st := &bundle.RuntimeStats{
		Time:          time.Now(),
		Source:        "perfdoctor agent: runtime.MemStats",
		HeapAlloc:     ms.HeapAlloc,
		HeapInuse:     ms.HeapInuse,
		HeapObjects:   ms.HeapObjects,
		HeapSys:       ms.HeapSys,
		Sys:           ms.Sys,
		TotalAlloc:    ms.TotalAlloc,
		Mallocs:       ms.Mallocs,
		Frees:         ms.Frees,
		NextGC:        ms.NextGC,
		LastGC:        ms.LastGC,
		NumGC:         uint64(ms.NumGC),
		NumForcedGC:   uint64(ms.NumForcedGC),
		GCCPUFraction: ms.GCCPUFraction,
		MaxRSS:        maxRSS,
		Runtime:       Snapshot(),
	}
	// Unroll the pause ring (most recent at (NumGC+255)%256), oldest first.
	n := min(uint64(ms.NumGC), uint64(len(ms.PauseNs)))
	for i := n; i > 0; i-- {
		j := (uint64(ms.NumGC) - i) % uint64(len(ms.PauseNs))
		st.Pauses = append(st.Pauses, bundle.Pause{End: ms.PauseEnd[j], Ns: ms.PauseNs[j]})
	}
	return st
}
