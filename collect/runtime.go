package collect

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/perfdoctor/perfdoctor/bundle"
)

// ExpvarPath is where the standard library's expvar package serves its
// variables, memstats among them.
const ExpvarPath = "/debug/vars"

// siblingURL is path on the target's host, under the prefix the pprof
// index is mounted at (".../debug/pprof/" becomes ".../" + path).
func (s *settings) siblingURL(path string) *url.URL {
	u := *s.base
	prefix := strings.TrimSuffix(u.Path, "/")
	prefix = strings.TrimSuffix(prefix, "/debug/pprof")
	u.Path = prefix + path
	return &u
}

// runtimeStats is one sample of runtime statistics: the runtime.MemStats
// trailer of heap?debug=1, else expvar's memstats, plus the full
// runtime/metrics snapshot when the target serves one (the agent). It fails
// only when none of them is served.
func (c *collector) runtimeStats(ctx context.Context, it item) (bundle.RuntimeStats, error) {
	var st bundle.RuntimeStats
	f, err := c.fetchItem(ctx, it)
	c.annotate(it.name, f.attempts, f.note(it))
	body := f.body
	if err == nil {
		st, err = bundle.ParseMemStats(bytes.NewReader(body))
		if errors.Is(err, bundle.ErrNoMemStats) {
			err = errors.New("heap?debug=1 has no runtime.MemStats section")
		}
	}
	if err != nil {
		if ev, everr := c.expvarStats(ctx); everr == nil {
			st, err = ev, nil
		}
	}
	rm, rmErr := c.runtimeMetrics(ctx)
	if rmErr != nil {
		c.Logger.Debug("no runtime/metrics snapshot", "item", it.name, "err", rmErr.Error())
	}
	if err != nil {
		if rm == nil {
			return st, err
		}
		st = statsFromMetrics(rm) // the agent alone is enough
	}
	st.Runtime = rm
	st.Time = time.Now()
	return st, nil
}

// runtimeMetrics reads bundle.MetricsPath, or returns nil and why not.
func (c *collector) runtimeMetrics(ctx context.Context) (*bundle.RuntimeMetrics, error) {
	body, err := c.get(ctx, c.siblingURL(bundle.MetricsPath), c.Timeout, min(c.MaxBytes, 16<<20))
	if err != nil {
		return nil, err
	}
	var rm bundle.RuntimeMetrics
	if err := json.Unmarshal(body, &rm); err != nil {
		return nil, fmt.Errorf("%s: %w", bundle.MetricsPath, err)
	}
	if len(rm.Values) == 0 {
		return nil, fmt.Errorf("%s: no metric values", bundle.MetricsPath)
	}
	if rm.Time.IsZero() {
		rm.Time = time.Now()
	}
	return &rm, nil
}

// expvarMemStats is the part of runtime.MemStats that expvar serves and
// RuntimeStats keeps.
type expvarMemStats struct {
	HeapAlloc, HeapInuse, HeapObjects, HeapSys, Sys uint64
	TotalAlloc, Mallocs, Frees, NextGC, LastGC      uint64
	NumGC, NumForcedGC                              uint32
	GCCPUFraction                                   float64
	PauseNs, PauseEnd                               []uint64
}

// expvarStats reads memstats from expvar's /debug/vars.
func (c *collector) expvarStats(ctx context.Context) (bundle.RuntimeStats, error) {
	var st bundle.RuntimeStats
	body, err := c.get(ctx, c.siblingURL(ExpvarPath), c.Timeout, min(c.MaxBytes, 16<<20))
	if err != nil {
		return st, err
	}
	var vars struct {
		MemStats *expvarMemStats `json:"memstats"`
	}
	if err := json.Unmarshal(body, &vars); err != nil {
		return st, fmt.Errorf("%s: %w", ExpvarPath, err)
	}
	m := vars.MemStats
	if m == nil {
		return st, fmt.Errorf("%s has no memstats", ExpvarPath)
	}
	st = bundle.RuntimeStats{
		Source:    "expvar memstats",
		HeapAlloc: m.HeapAlloc, HeapInuse: m.HeapInuse, HeapObjects: m.HeapObjects, HeapSys: m.HeapSys, Sys: m.Sys,
		TotalAlloc: m.TotalAlloc, Mallocs: m.Mallocs, Frees: m.Frees, NextGC: m.NextGC, LastGC: m.LastGC,
		NumGC: uint64(m.NumGC), NumForcedGC: uint64(m.NumForcedGC), GCCPUFraction: m.GCCPUFraction,
	}
	st.Pauses = orderPauses(m.PauseNs, m.PauseEnd, st.NumGC)
	return st, nil
}

// orderPauses unrolls the runtime's circular pause buffers (the most recent
// at (NumGC+255)%256) into oldest-first order, as bundle.ParseMemStats does.
func orderPauses(ns, end []uint64, numGC uint64) []bundle.Pause {
	n := len(ns)
	if n == 0 || len(end) != n {
		return nil
	}
	count := int(min(numGC, uint64(n)))
	out := make([]bundle.Pause, 0, count)
	for i := count; i > 0; i-- {
		j := int((numGC - uint64(i)) % uint64(n))
		out = append(out, bundle.Pause{End: end[j], Ns: ns[j]})
	}
	return out
}

// statsFromMetrics fills the MemStats-shaped fields from runtime/metrics.
func statsFromMetrics(rm *bundle.RuntimeMetrics) bundle.RuntimeStats {
	v := func(name string) uint64 { return uint64(max(rm.Values[name], 0)) }
	return bundle.RuntimeStats{
		Source:      "runtime/metrics",
		HeapAlloc:   v("/memory/classes/heap/objects:bytes"),
		HeapObjects: v("/gc/heap/objects:objects"),
		Sys:         v("/memory/classes/total:bytes"),
		TotalAlloc:  v("/gc/heap/allocs:bytes"),
		Mallocs:     v("/gc/heap/allocs:objects"),
		Frees:       v("/gc/heap/frees:objects"),
		NextGC:      v("/gc/heap/goal:bytes"),
		NumGC:       v("/gc/cycles/total:gc-cycles"),
		NumForcedGC: v("/gc/cycles/forced:gc-cycles"),
	}
}

// Heap series (collect --heap-every).
const (
	MinHeapEvery     = 100 * time.Millisecond
	MaxHeapSnapshots = 60
)

// HeapSeriesFile names the i-th heap snapshot within the window (i >= 1);
// heap-0.pb.gz is the start (bundle.HeapStartFile), heap.pb.gz the end.
func HeapSeriesFile(i int) string { return fmt.Sprintf("heap-%d.pb.gz", i) }

// heapSeries lists the snapshots strictly inside the window.
func (s *settings) heapSeries() []item {
	if s.HeapEvery <= 0 {
		return nil
	}
	var out []item
	for i := 1; time.Duration(i)*s.HeapEvery < s.window && i <= MaxHeapSnapshots; i++ {
		out = append(out, item{name: fmt.Sprintf("heap-%d", i), file: HeapSeriesFile(i), kind: kindProfile, endpoint: "heap"})
	}
	return out
}
