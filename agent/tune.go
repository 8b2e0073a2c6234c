package agent

import (
	"fmt"
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"time"
)

// runtimeCtl is the process-wide runtime state the agent reads and changes;
// tests replace it so they do not retune the test binary.
type runtimeCtl struct {
	getenv         func(string) string
	setGCPercent   func(int) int
	gcPercent      func() int
	setMemoryLimit func(int64) int64
	gomaxprocs     func(int) int
	setDefaultProc func()
	numCPU         func() int
	heapLive       func() uint64
}

func realRuntime() runtimeCtl {
	return runtimeCtl{
		getenv:         os.Getenv,
		setGCPercent:   debug.SetGCPercent,
		gcPercent:      currentGOGC,
		setMemoryLimit: debug.SetMemoryLimit,
		gomaxprocs:     runtime.GOMAXPROCS,
		setDefaultProc: runtime.SetDefaultGOMAXPROCS,
		numCPU:         runtime.NumCPU,
		heapLive:       readHeapLive,
	}
}

// MemoryLimitDecision is what the agent did about GOMEMLIMIT, and why.
type MemoryLimitDecision struct {
	Time        time.Time `json:"time"`
	CgroupLimit uint64    `json:"cgroup_limit_bytes,omitempty"`
	Fraction    float64   `json:"fraction"`
	Previous    int64     `json:"previous_bytes"` // math.MaxInt64 = none
	GOMEMLIMIT  int64     `json:"gomemlimit_bytes"`
	Applied     bool      `json:"applied"`
	Reason      string    `json:"reason"`
}

// decideMemoryLimit sets GOMEMLIMIT to fraction × the cgroup memory limit
// when neither the environment nor the program has set one.
func decideMemoryLimit(rt runtimeCtl, lim *Limits, frac float64) MemoryLimitDecision {
	cur := rt.setMemoryLimit(-1)
	d := MemoryLimitDecision{Time: time.Now(), Fraction: frac, Previous: cur, GOMEMLIMIT: cur}
	if lim != nil {
		d.CgroupLimit = lim.MemoryBytes
	}
	switch {
	case rt.getenv("GOMEMLIMIT") != "":
		d.Reason = "GOMEMLIMIT is set in the environment (" + rt.getenv("GOMEMLIMIT") + "); left alone"
	case cur != math.MaxInt64:
		d.Reason = fmt.Sprintf("the program already set a memory limit (%d bytes); left alone", cur)
	case lim == nil || lim.MemoryBytes == 0:
		d.Reason = "no cgroup memory limit found; no GOMEMLIMIT derived"
	default:
		d.GOMEMLIMIT = int64(float64(lim.MemoryBytes) * frac)
		rt.setMemoryLimit(d.GOMEMLIMIT)
		d.Applied = true
		d.Reason = fmt.Sprintf("GOMEMLIMIT = %.2f × cgroup memory limit %d (set at %s)", frac, lim.MemoryBytes, lim.MemoryFrom)
	}
	return d
}

// GOGCDecision is the GC tuner's latest evaluation.
type GOGCDecision struct {
	Time       time.Time `json:"time"`
	LiveHeap   uint64    `json:"live_heap_bytes"` // /gc/heap/live:bytes
	Limit      uint64    `json:"limit_bytes,omitempty"`
	Target     uint64    `json:"target_bytes,omitempty"` // Limit × GOGCTargetFraction
	Previous   int       `json:"previous"`
	GOGC       int       `json:"gogc"`
	Applied    bool      `json:"applied"`
	Active     bool      `json:"active"` // false: the tuner stands aside for good
	Reason     string    `json:"reason"`
	Evaluation int       `json:"evaluation"` // how many times it has run
}

// minLive floors the live heap, which reads 0 before the first GC cycle;
// 4 MiB is the runtime's own minimum heap goal.
const minLive = 4 << 20

// tuneGOGC computes GOGC so that the next heap goal, live × (1+GOGC/100),
// lands at target: GOGC = (target/live − 1) × 100, clamped to [lo, hi].
func tuneGOGC(target, live uint64, lo, hi int) int {
	live = max(live, minLive)
	g := (float64(target)/float64(live) - 1) * 100
	if math.IsNaN(g) || g < float64(lo) {
		return lo
	}
	if g > float64(hi) {
		return hi
	}
	return int(g)
}

// gogcTuner raises GOGC while the live heap is small against the memory
// limit and backs off as it grows, on top of GOMEMLIMIT.
type gogcTuner struct {
	rt         runtimeCtl
	limit      uint64 // bytes the heap goal must stay under (before frac)
	frac       float64
	lo, hi     int
	original   int // GOGC before the tuner first changed it
	changed    bool
	last       GOGCDecision
	evaluation int
}

// newGOGCTuner decides whether the tuner may run at all.
func newGOGCTuner(rt runtimeCtl, lim *Limits, o *Options) (*gogcTuner, GOGCDecision) {
	t := &gogcTuner{rt: rt, frac: o.GOGCTargetFraction, lo: o.GOGCMin, hi: o.GOGCMax}
	d := GOGCDecision{Time: time.Now(), GOGC: rt.gcPercent()}
	d.Previous = d.GOGC
	if lim != nil {
		t.limit = lim.MemoryBytes
	}
	if ml := rt.setMemoryLimit(-1); t.limit == 0 && ml != math.MaxInt64 {
		t.limit = uint64(ml) // no cgroup limit: tune against GOMEMLIMIT
	}
	switch {
	case rt.getenv("GOGC") != "":
		d.Reason = "GOGC is set in the environment (" + rt.getenv("GOGC") + "); tuner off"
		return nil, d
	case d.GOGC < 0:
		d.Reason = "GC is off (GOGC=off); tuner off"
		return nil, d
	case t.limit == 0:
		d.Reason = "no memory limit (cgroup or GOMEMLIMIT) to tune against; tuner off"
		return nil, d
	}
	t.original = d.GOGC
	d.Active = true
	d.Limit = t.limit
	d.Reason = "armed; not evaluated yet"
	t.last = d
	return t, d
}

// evaluate reads the live heap and adjusts GOGC. It changes GOGC only when
// the new value differs by 10% or more, or reaches a bound, so a steady
// heap does not make it call SetGCPercent on every tick.
func (t *gogcTuner) evaluate(now time.Time) GOGCDecision {
	t.evaluation++
	live := t.rt.heapLive()
	target := uint64(float64(t.limit) * t.frac)
	cur := t.rt.gcPercent()
	g := tuneGOGC(target, live, t.lo, t.hi)
	d := GOGCDecision{Time: now, LiveHeap: live, Limit: t.limit, Target: target, Previous: cur, GOGC: cur, Active: true, Evaluation: t.evaluation}
	diff := g - cur
	if diff < 0 {
		diff = -diff
	}
	switch {
	case g == cur:
		d.Reason = fmt.Sprintf("live heap %d against target %d gives GOGC %d; unchanged", live, target, g)
	case diff*10 < cur && g != t.lo && g != t.hi:
		d.Reason = fmt.Sprintf("live heap %d against target %d gives GOGC %d, within 10%% of %d; unchanged", live, target, g, cur)
	default:
		t.rt.setGCPercent(g)
		t.changed = true
		d.GOGC, d.Applied = g, true
		d.Reason = fmt.Sprintf("live heap %d against target %d (%.2f × limit %d): GOGC = clamp((target/live − 1) × 100, %d, %d) = %d",
			live, target, t.frac, t.limit, t.lo, t.hi, g)
	}
	t.last = d
	return d
}

// restore puts GOGC back as it was before the tuner.
func (t *gogcTuner) restore() {
	if t.changed {
		t.rt.setGCPercent(t.original)
	}
}

func readHeapLive() uint64 {
	return uint64(readMetric(mHeapLive))
}

// ProcsDecision is the GOMAXPROCS check: what the whole cgroup hierarchy
// allows, what the runtime uses, and what the agent did.
type ProcsDecision struct {
	Time          time.Time `json:"time"`
	NumCPU        int       `json:"num_cpu"`                   // CPUs the process may run on
	CPULimitCores float64   `json:"cpu_limit_cores,omitempty"` // smallest quota up the hierarchy
	CPULimitFrom  string    `json:"cpu_limit_from,omitempty"`
	LeafCores     float64   `json:"leaf_cpu_cores,omitempty"` // what the Go runtime reads
	GOMAXPROCS    int       `json:"gomaxprocs"`               // in effect before any change
	Recommended   int       `json:"recommended"`
	Applied       bool      `json:"applied"`
	Reason        string    `json:"reason"`
}

// recommendProcs applies the runtime's own rounding (Go 1.25+): the limit
// rounded up, at least 2, at most the CPU count.
func recommendProcs(limitCores float64, numCPU int) int {
	if limitCores <= 0 {
		return numCPU
	}
	return min(numCPU, max(2, ceilCores(limitCores)))
}

// checkProcs compares GOMAXPROCS with the effective CPU limit and lowers it
// when set is true, the limit is tighter, and GOMAXPROCS is not set in the
// environment. owned says the agent set GOMAXPROCS before, so it follows the
// limit up again too.
func checkProcs(rt runtimeCtl, lim *Limits, set, owned bool) ProcsDecision {
	d := ProcsDecision{Time: time.Now(), NumCPU: rt.numCPU(), GOMAXPROCS: rt.gomaxprocs(0)}
	if lim != nil {
		d.CPULimitCores, d.CPULimitFrom, d.LeafCores = lim.CPUCores, lim.CPUFrom, lim.leafCPUCores()
	}
	d.Recommended = recommendProcs(d.CPULimitCores, d.NumCPU)
	env := rt.getenv("GOMAXPROCS")
	switch {
	case d.GOMAXPROCS == d.Recommended:
		d.Reason = "GOMAXPROCS matches the effective CPU limit"
		if d.CPULimitCores == 0 {
			d.Reason = "no CPU limit in the cgroup hierarchy; GOMAXPROCS = CPU count"
		}
	case d.GOMAXPROCS < d.Recommended && !(owned && set):
		d.Reason = fmt.Sprintf("GOMAXPROCS %d is below what the limits allow (%d); left alone", d.GOMAXPROCS, d.Recommended)
	case env != "":
		d.Reason = fmt.Sprintf("GOMAXPROCS=%s from the environment exceeds the effective CPU limit %.2f cores (set at %s); left alone, recommend %d",
			env, d.CPULimitCores, d.CPULimitFrom, d.Recommended)
	case !set:
		d.Reason = fmt.Sprintf("GOMAXPROCS %d exceeds the effective CPU limit %.2f cores (set at %s, leaf says %s); recommend %d (Options.SetGOMAXPROCS would apply it)",
			d.GOMAXPROCS, d.CPULimitCores, d.CPULimitFrom, coresString(d.LeafCores), d.Recommended)
	default:
		rt.gomaxprocs(d.Recommended)
		d.Applied = true
		d.Reason = fmt.Sprintf("GOMAXPROCS %d -> %d: effective CPU limit %.2f cores set at %s (leaf says %s)",
			d.GOMAXPROCS, d.Recommended, d.CPULimitCores, d.CPULimitFrom, coresString(d.LeafCores))
	}
	return d
}

func coresString(c float64) string {
	if c == 0 {
		return "no limit"
	}
	return strconv.FormatFloat(c, 'f', -1, 64) + " cores"
}
