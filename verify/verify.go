// Package verify compares two versions of a service under the same load:
// it alternates them over rounds so slow drift of the machine cancels, and
// judges the paired after/before ratios of throughput, latency and (for
// local targets) CPU time per request with 95% confidence intervals.
package verify

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/perfdoctor/perfdoctor/collect/jvm"
	"github.com/perfdoctor/perfdoctor/collect/system"
	"github.com/perfdoctor/perfdoctor/internal/progress"
	"github.com/perfdoctor/perfdoctor/load"
)

// Verdicts.
const (
	Faster = "faster"
	Slower = "slower"
	Same   = "no significant change"
)

// Options says what to compare and how.
type Options struct {
	Before, After load.Config
	// PIDs are the before and after targets' processes, 0 when unknown
	// (their CPU time per request then goes unmeasured).
	PIDs      [2]int
	Rounds    int
	Warmup    time.Duration // load before each measurement, not counted
	MinChange float64       // significant changes smaller than this fraction are ignored
	// OnRound, when set, is called after each complete round.
	OnRound func(done, of int, r Round)
	// Start, when set, starts version i (0 before, 1 after) for each of its
	// measurements, warm-up included, and the returned stop ends it after:
	// for versions that cannot run side by side (perfdoctor try runs one
	// command on one port under two configurations). pid is the process
	// to measure, 0 when unknown; PIDs is then ignored.
	Start func(ctx context.Context, i int) (pid int, stop func(), err error)
	// Together measures both versions at the same time in each round,
	// each under its own copy of the load, instead of one after the
	// other: on a busy shared machine both then meet the same neighbours,
	// so the paired CPU per request keeps only the versions' difference.
	// Throughput and latency then compete for the same CPUs. Rounds' First
	// is "both". With Start, both versions start for each round.
	Together bool
	// Settle is, for a side whose process (PIDs) is a local JVM, the
	// longest to load it before its first measurement until its JIT
	// compiler threads go quiet (collect/jvm's WaitSettle), so that no
	// round measures a JVM still compiling its hot code; 0 does not wait,
	// and sides that are not JVMs never do. At most jvm.MaxSettle. Not
	// with Start, whose every measurement is a fresh process.
	Settle time.Duration
	// Progress shows the settle wait (on a terminal).
	Progress *progress.Line
}

// SchemaVersion is the version of Result's JSON (docs/verify.md). Fields
// are only added within a version.
const SchemaVersion = 1

// Result is verify's output; its JSON is `verify --format json`.
type Result struct {
	SchemaVersion int        `json:"schema_version"`
	Before        string     `json:"before"`
	After         string     `json:"after"`
	Rounds        []Round    `json:"rounds"`
	Throughput    load.Ratio `json:"-"`
	P50, P99      load.Ratio `json:"-"`
	CPU           load.Ratio `json:"-"` // the targets' CPU time per request, when their processes are local
	PeakRSS       load.Ratio `json:"-"` // the targets' peak resident memory, when their processes are local
	Ratios        []Ratio    `json:"ratios"`
	Verdict       string     `json:"verdict"`
	Why           string     `json:"why,omitempty"`
	Method        string     `json:"method"`
	LoadAvg       float64    `json:"load_average"`
	Warnings      []string   `json:"warnings,omitempty"`
	// JITSettle is each JVM side's wait for its JIT before the first
	// round (Options.Settle); absent when no side is a JVM.
	JITSettle []JITSettle `json:"jit_settle,omitempty"`
}

// JITSettle is how long one JVM side was loaded, before its first
// measurement, until its JIT compiler threads went quiet.
type JITSettle struct {
	Side    string  `json:"side"` // "before" or "after"
	PID     int     `json:"pid"`
	Seconds float64 `json:"seconds"`
	// Settled is false when the bound (Options.Settle) came first, the
	// compiler still busy: the first rounds then measure it compiling.
	Settled bool `json:"settled"`
	// CompilerCores is the compiler threads' CPU, in cores, over the last
	// 3 s of the wait.
	CompilerCores float64 `json:"compiler_cores"`
}

// Round is one measurement of each version.
type Round struct {
	Round  int          `json:"round"`
	First  string       `json:"first"` // "before" or "after"
	Before *load.Result `json:"before"`
	After  *load.Result `json:"after"`
	// The target processes' CPU time per request, in microseconds (from
	// /proc, for local targets), 0 when unknown.
	BeforeCPU float64 `json:"before_cpu_us_per_request,omitempty"`
	AfterCPU  float64 `json:"after_cpu_us_per_request,omitempty"`
	// The target processes' peak resident set size in bytes (VmHWM) at
	// the end of the measurement, 0 when unknown: the peak of the round
	// when each measurement starts a process (Options.Start), else of the
	// process's life so far.
	BeforePeakRSS uint64 `json:"before_peak_rss_bytes,omitempty"`
	AfterPeakRSS  uint64 `json:"after_peak_rss_bytes,omitempty"`
}

// Ratio is one judged figure.
type Ratio struct {
	Figure   string  `json:"figure"`
	Estimate float64 `json:"ratio"`
	Low      float64 `json:"ci95_low"`
	High     float64 `json:"ci95_high"`
	Change   string  `json:"change"` // "better", "worse", "none"
}

// Run measures both versions over o.Rounds, alternating which goes first,
// and judges the paired ratios. Interrupted through ctx, it judges the
// complete rounds only.
func Run(ctx context.Context, o Options) (*Result, error) {
	v := &Result{SchemaVersion: SchemaVersion, Before: o.Before.URL, After: o.After.URL,
		Method: "paired t-test on per-round log ratios (after/before), 95% interval, rounds alternate their order"}
	if o.Settle < 0 || o.Settle > jvm.MaxSettle {
		return nil, fmt.Errorf("JIT settle time %s is outside 0..%gm", o.Settle, jvm.MaxSettle.Minutes())
	}
	for i, name := range []string{"before", "after"} {
		s, unread, err := settleSide(ctx, o, i)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		if unread != nil {
			v.Warnings = append(v.Warnings, fmt.Sprintf("the %s JVM's JIT was not waited for: %v", name, unread))
		}
		if s == nil {
			continue
		}
		s.Side = name
		v.JITSettle = append(v.JITSettle, *s)
		if !s.Settled {
			v.Warnings = append(v.Warnings, fmt.Sprintf("the %s JVM's JIT compiler threads still used %.2f of a core after %s under load: its first rounds measure it compiling (--jit-settle)", name, s.CompilerCores, o.Settle))
		}
	}
	if ctx.Err() != nil {
		v.judge(o.MinChange)
		return v, nil
	}
	// measure loads version i; cpu is the target process's CPU time per
	// request in microseconds and rss its peak resident memory, 0 when its
	// process is not known.
	measure := func(i int) (res *load.Result, cpu float64, rss uint64, err error) {
		cfg, pid := []load.Config{o.Before, o.After}[i], o.PIDs[i]
		if o.Start != nil {
			var stop func()
			if pid, stop, err = o.Start(ctx, i); err != nil {
				return nil, 0, 0, err
			}
			defer stop()
		}
		if o.Warmup > 0 {
			w := cfg
			w.Duration, w.Progress = o.Warmup, nil
			if _, err := load.Run(ctx, w); err != nil {
				return nil, 0, 0, err
			}
		}
		cpu0 := readCPU(pid)
		res, err = load.Run(ctx, cfg)
		if err != nil {
			return nil, 0, 0, err
		}
		if err := res.AllFailed(); err != nil {
			return nil, 0, 0, fmt.Errorf("%s: %w", cfg.URL, err)
		}
		if used, ok := cpuSince(cpu0, readCPU(pid)); ok && res.Requests > 0 {
			cpu = used * 1e6 / float64(res.Requests)
		}
		return res, cpu, peakRSS(pid), nil
	}
	for r := range o.Rounds {
		// got[0] is before, got[1] after; odd rounds measure after first.
		p := Round{Round: r + 1, First: "before"}
		got := []*load.Result{nil, nil}
		cpu := []float64{0, 0}
		rss := []uint64{0, 0}
		sequence := []int{0, 1}
		if r%2 == 1 {
			sequence = []int{1, 0}
			p.First = "after"
		}
		if o.Together {
			p.First = "both"
			errs := make([]error, 2)
			var wg sync.WaitGroup
			for i := range 2 {
				wg.Go(func() { got[i], cpu[i], rss[i], errs[i] = measure(i) })
			}
			wg.Wait()
			if err := errors.Join(errs...); err != nil {
				return nil, err
			}
			sequence = nil
		}
		for _, i := range sequence {
			res, c, m, err := measure(i)
			if err != nil {
				return nil, err
			}
			got[i], cpu[i], rss[i] = res, c, m
			if ctx.Err() != nil {
				break
			}
		}
		if ctx.Err() != nil || got[0] == nil || got[1] == nil {
			break // interrupted: judge the complete rounds only
		}
		p.Before, p.After = got[0], got[1]
		p.BeforeCPU, p.AfterCPU = cpu[0], cpu[1]
		p.BeforePeakRSS, p.AfterPeakRSS = rss[0], rss[1]
		v.Rounds = append(v.Rounds, p)
		if o.OnRound != nil {
			o.OnRound(r+1, o.Rounds, p)
		}
		for _, res := range got {
			for _, w := range res.Warnings {
				if !slices.Contains(v.Warnings, w) {
					v.Warnings = append(v.Warnings, w)
				}
			}
		}
	}
	v.judge(o.MinChange)
	return v, nil
}

// isJVM and waitSettle are settleSide's view of the process; tests replace them.
var (
	isJVM      = func(pid int) bool { return jvm.CheckJVM(system.Roots{}, pid) == nil }
	waitSettle = jvm.WaitSettle
)

// settleSlice is how long each of the loads that keep a JVM side busy while
// its JIT settles runs.
const settleSlice = 5 * time.Second

// settleSide loads side i (0 before, 1 after) until its JIT settles, when
// its process is a local JVM and o.Settle allows; nil otherwise. The load
// is the side's own, without progress; a load that fails ends the wait
// with its error (err). When the compiler threads' CPU cannot be read
// the rounds go on unwaited and unread says why.
func settleSide(ctx context.Context, o Options, i int) (s *JITSettle, unread, err error) {
	pid := o.PIDs[i]
	if o.Settle <= 0 || o.Start != nil || pid <= 0 || !isJVM(pid) {
		return nil, nil, nil
	}
	cfg := []load.Config{o.Before, o.After}[i]
	cfg.Duration, cfg.Progress = settleSlice, nil
	loadCtx, stopLoad := context.WithCancel(ctx)
	defer stopLoad()
	waitCtx, stopWait := context.WithCancel(ctx)
	defer stopWait()
	loadErr := make(chan error, 1)
	go func() {
		// The load runs in slices until the wait ends, so that a side
		// whose every request fails ends it within a slice.
		for loadCtx.Err() == nil {
			res, err := load.Run(loadCtx, cfg)
			if err == nil && loadCtx.Err() == nil {
				err = res.AllFailed()
			}
			if err != nil {
				stopWait()
				loadErr <- err
				return
			}
		}
		loadErr <- nil
	}()
	w, werr := waitSettle(waitCtx, "", pid, o.Settle, o.Progress)
	o.Progress.Clear()
	stopLoad()
	if lerr := <-loadErr; lerr != nil {
		return nil, nil, fmt.Errorf("loading it while its JIT settles: %w", lerr)
	}
	if ctx.Err() != nil {
		return nil, nil, nil // interrupted: Run judges nothing
	}
	if werr != nil {
		return nil, werr, nil
	}
	return &JITSettle{PID: pid, Seconds: math.Round(w.Waited.Seconds()*10) / 10, Settled: w.Settled, CompilerCores: math.Round(w.Cores*1000) / 1000}, nil, nil
}

// judge computes the ratios and the verdict from the complete rounds.
func (v *Result) judge(minChange float64) {
	figs := func(get func(*load.Result) float64) (b, af []float64) {
		for _, p := range v.Rounds {
			b, af = append(b, get(p.Before)), append(af, get(p.After))
		}
		return b, af
	}
	v.Throughput = load.PairedRatio(figs(func(r *load.Result) float64 { return r.Throughput }))
	// A command load measures no latency: its verdict is throughput's.
	latency := len(v.Rounds) == 0 || v.Rounds[0].Before.Mode != load.ModeCommand
	if latency {
		v.P50 = load.PairedRatio(figs(func(r *load.Result) float64 { return float64(r.Latency.P50) }))
		v.P99 = load.PairedRatio(figs(func(r *load.Result) float64 { return float64(r.Latency.P99) }))
	}
	v.LoadAvg = load.LoadAverage()
	var cpuKnown, rssKnown bool
	v.CPU, cpuKnown = v.pairedKnown(func(p Round) (float64, float64) { return p.BeforeCPU, p.AfterCPU })
	v.PeakRSS, rssKnown = v.pairedKnown(func(p Round) (float64, float64) { return float64(p.BeforePeakRSS), float64(p.AfterPeakRSS) })

	// Throughput up is better; latency down is better.
	tp, p50, p99 := v.Throughput.Direction(minChange), -v.P50.Direction(minChange), -v.P99.Direction(minChange)
	for _, x := range []struct {
		name string
		r    load.Ratio
		dir  int
	}{{"throughput", v.Throughput, tp}, {"p50 latency", v.P50, p50}, {"p99 latency", v.P99, p99},
		{"CPU/request", v.CPU, -v.CPU.Direction(minChange)}, {"peak RSS", v.PeakRSS, -v.PeakRSS.Direction(minChange)}} {
		if (x.name == "CPU/request" && !cpuKnown) || (x.name == "peak RSS" && !rssKnown) || (!latency && x.name != "throughput" && x.name != "CPU/request" && x.name != "peak RSS") {
			continue
		}
		v.Ratios = append(v.Ratios, Ratio{x.name, x.r.Estimate, x.r.Low, x.r.High, map[int]string{1: "better", -1: "worse", 0: "none"}[x.dir]})
	}
	switch {
	case len(v.Rounds) < 2:
		v.Verdict, v.Why = Same, "fewer than two complete rounds"
	case tp < 0 || p99 < 0:
		v.Verdict = Slower
		v.Why = fmt.Sprintf("throughput %s, p99 latency %s (after/before)", v.Throughput, v.P99)
		if !latency {
			v.Why = fmt.Sprintf("throughput %s (after/before)", v.Throughput)
		}
		if cpuKnown && v.CPU.Direction(minChange) < 0 {
			// Where the generator shares the CPUs and nothing caps the
			// service, a version that burns more CPU can serve more.
			v.Why += fmt.Sprintf("; but CPU per request is %s: with the load generator on the same CPUs and no CPU quota, throughput favours the version that takes more CPU", v.CPU)
		}
	case tp > 0 || p99 > 0 || p50 > 0:
		v.Verdict = Faster
	default:
		v.Verdict = Same
	}
}

// pairedKnown is the paired ratio of a figure that every round (at least
// two) has for both versions; false when a round lacks it.
func (v *Result) pairedKnown(get func(Round) (before, after float64)) (load.Ratio, bool) {
	var b, a []float64
	for _, p := range v.Rounds {
		x, y := get(p)
		if x <= 0 || y <= 0 {
			return load.Ratio{}, false
		}
		b, a = append(b, x), append(a, y)
	}
	if len(b) < 2 {
		return load.Ratio{}, false
	}
	return load.PairedRatio(b, a), true
}
