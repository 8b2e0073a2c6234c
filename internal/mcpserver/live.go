package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/perfdoctor/perfdoctor/bundle"
	"github.com/perfdoctor/perfdoctor/collect"
	"github.com/perfdoctor/perfdoctor/collect/jvm"
	"github.com/perfdoctor/perfdoctor/diagnose"
	"github.com/perfdoctor/perfdoctor/load"
	"github.com/perfdoctor/perfdoctor/underload"
	"github.com/perfdoctor/perfdoctor/verify"
)

// Bounds of live work: an agent's call should end in minutes, and an MCP
// client waits for it.
const (
	defaultWindow = 10 * time.Second
	maxWindow     = 2 * time.Minute
	maxVerify     = 10 * time.Minute // rounds × both sides × (warm-up + duration)
	maxWorkers    = 256
)

// liveTarget is what collect and run observe: one of a Go service's pprof
// URL, a local process through perf, or a local JVM.
type liveTarget struct {
	Target  string `json:"target,omitempty" jsonschema:"a live Go service's pprof URL (http://127.0.0.1:6060 or .../debug/pprof/); or give perf_pid or jvm_pid"`
	PerfPID int    `json:"perf_pid,omitempty" jsonschema:"a local process of any language to observe through Linux perf instead (its PID)"`
	JVMPID  int    `json:"jvm_pid,omitempty" jsonschema:"a local JVM to record instead (its PID): async-profiler and JFR, or JFR alone when the agent cannot be loaded"`
	JFROnly bool   `json:"jfr_only,omitempty" jsonschema:"with jvm_pid: record with Java Flight Recorder alone, no async-profiler"`
	// JITSettleSeconds is a pointer so that 0 (begin at once) differs
	// from absent (the CLI's default).
	JITSettleSeconds *float64 `json:"jit_settle_seconds,omitempty" jsonschema:"with jvm_pid: wait at most this long after the recording starts for the JVM's JIT compiler to go quiet before the window begins (a JVM's first JFR recording deoptimizes its compiled code; default 90, 0 begins at once)"`
}

type collectInput struct {
	liveTarget
	DurationSeconds float64 `json:"duration_seconds,omitempty" jsonschema:"the observation window in seconds (default 10, at most 120)"`
	Output          string  `json:"output,omitempty" jsonschema:"the bundle folder to create (default a new folder in the first allowed folder)"`
}

type collectAnswer struct {
	Bundle  string   `json:"bundle" jsonschema:"the bundle written: pass it to diagnose, top, callers, source or diff"`
	Items   []string `json:"items" jsonschema:"what the bundle holds"`
	Failed  []string `json:"failed,omitempty" jsonschema:"what could not be collected, and why"`
	Partial bool     `json:"partial"`
}

type runInput struct {
	liveTarget
	Load            string  `json:"load" jsonschema:"the URL to load while collecting (http://127.0.0.1:8080/api)"`
	DurationSeconds float64 `json:"duration_seconds,omitempty" jsonschema:"the collection window under load (default 10, at most 120)"`
	WarmupSeconds   float64 `json:"warmup_seconds,omitempty" jsonschema:"load before collecting starts (default 2)"`
	Concurrency     int     `json:"concurrency,omitempty" jsonschema:"closed-loop workers (default 8, at most 256)"`
	Rate            float64 `json:"rate,omitempty" jsonschema:"requests per second for an open loop instead (concurrency is then the connections)"`
	Output          string  `json:"output,omitempty" jsonschema:"the bundle folder to create (default a new folder in the first allowed folder)"`
}

type runAnswer struct {
	Load string `json:"load" jsonschema:"what the load measured"`
	diagnoseAnswer
}

type verifyInput struct {
	Before          string  `json:"before" jsonschema:"URL of the version before the change (http://127.0.0.1:8080/)"`
	After           string  `json:"after" jsonschema:"URL of the version after the change"`
	Rounds          int     `json:"rounds,omitempty" jsonschema:"rounds, each measuring both versions once, order alternating (default 4, 2..20)"`
	DurationSeconds float64 `json:"duration_seconds,omitempty" jsonschema:"each measurement's length (default 3)"`
	WarmupSeconds   float64 `json:"warmup_seconds,omitempty" jsonschema:"load before each measurement, not counted (default 1)"`
	Concurrency     int     `json:"concurrency,omitempty" jsonschema:"closed-loop workers (default 8, at most 256)"`
	MinChange       float64 `json:"min_change,omitempty" jsonschema:"ignore significant changes smaller than this fraction (e.g. 0.03)"`
	LoadCmd         string  `json:"load_cmd,omitempty" jsonschema:"for servers that speak neither HTTP nor UDP: the server's own benchmark tool as the load (sh -c), {host} {port} {addr} replaced by each target's; the targets are then tcp://host:port"`
	Units           int64   `json:"units,omitempty" jsonschema:"with load_cmd: the units of work (requests, transactions) one run of the command does"`
	Unit            string  `json:"unit,omitempty" jsonschema:"with load_cmd: what a unit is (SET, transaction)"`
	// JITSettleSeconds is a pointer so that 0 (do not wait) differs from
	// absent (the default).
	JITSettleSeconds *float64 `json:"jit_settle_seconds,omitempty" jsonschema:"for a version whose process is a local JVM: load it at most this long before the first round until its JIT compiler goes quiet, so that no round measures it compiling (default 90, 0 does not wait)"`
}

type verifyAnswer struct {
	Verdict  string     `json:"verdict" jsonschema:"faster, slower or no significant change"`
	Why      string     `json:"why,omitempty"`
	Method   string     `json:"method"`
	Rounds   int        `json:"rounds" jsonschema:"complete rounds"`
	Ratios   []ratio    `json:"ratios" jsonschema:"after/before with 95% confidence intervals"`
	Warnings []string   `json:"warnings,omitempty"`
	Sides    [2]measure `json:"means" jsonschema:"before and after: mean figures over the rounds"`
	// JITSettle is verify's own record (docs/verify.md), small and bounded
	// by the two sides.
	JITSettle []verify.JITSettle `json:"jit_settle,omitempty" jsonschema:"one per version whose process is a local JVM: the seconds it was loaded before the first round until its JIT compiler went quiet, and whether it did"`
}

type ratio struct {
	Figure string  `json:"figure"`
	Ratio  float64 `json:"ratio"`
	Low    float64 `json:"ci95_low"`
	High   float64 `json:"ci95_high"`
	Change string  `json:"change" jsonschema:"better, worse or none"`
}

type measure struct {
	Throughput float64 `json:"throughput" jsonschema:"successful requests per second"`
	P50Millis  float64 `json:"p50_ms"`
	P99Millis  float64 `json:"p99_ms"`
	Errors     int64   `json:"errors"`
}

func (s *server) registerLive(srv *mcp.Server) {
	addTool(srv, "collect", "Collect a bundle from a live Go service's pprof endpoint: CPU, heap, allocs, mutex, block and "+
		"goroutine profiles, a short execution trace, runtime statistics and, for a local process, /proc snapshots. "+
		"Loopback targets only, unless the user allowed others.", s.collect)
	addTool(srv, "run", "Load a service (load URL) while collecting a bundle from its pprof endpoint (target) after a "+
		"warm-up, then diagnose the bundle: the load's figures and the ranked findings.", s.run)
	addTool(srv, "verify", "Compare two running versions of a service under the same load (before and after URLs): paired "+
		"rounds alternating their order, after/before ratios of throughput and latency with 95% intervals, and a verdict.", s.verify)
}

// window turns seconds into a collection window, def when none was asked.
func window(seconds float64, def time.Duration) (time.Duration, error) {
	if seconds == 0 {
		return def, nil
	}
	d := time.Duration(seconds * float64(time.Second))
	if seconds < 1 || d > maxWindow || math.IsNaN(seconds) {
		return 0, fmt.Errorf("duration %gs out of range 1..%g", seconds, maxWindow.Seconds())
	}
	return d, nil
}

// bundleDir is where a new bundle goes: the output asked for, or a new
// folder named after the target in the first allowed folder.
func (s *server) bundleDir(output, target string) (string, error) {
	if output == "" {
		output = collect.DefaultBundleName(target, time.Now())
	}
	return s.writePath(output)
}

// collector checks the target and says how to observe it: underload's
// collector for a PID, nil for a pprof URL; name labels the bundle, and
// lead is how long the collection may wait before its window begins (a
// JVM's JIT settle), which a load must run on for.
func (s *server) collector(t liveTarget) (c underload.Collector, name string, lead time.Duration, err error) {
	given := 0
	for _, set := range []bool{t.Target != "", t.PerfPID != 0, t.JVMPID != 0} {
		if set {
			given++
		}
	}
	switch {
	case given != 1:
		return nil, "", 0, errors.New("give one target: target (a pprof URL), perf_pid or jvm_pid")
	case t.JFROnly && t.JVMPID == 0:
		return nil, "", 0, errors.New("jfr_only goes with jvm_pid")
	case t.Target != "":
		return nil, t.Target, 0, s.checkTarget(t.Target)
	}
	pid := max(t.PerfPID, t.JVMPID)
	if pid < 0 {
		return nil, "", 0, fmt.Errorf("pid %d: want a process ID", pid)
	}
	if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); err != nil {
		return nil, "", 0, fmt.Errorf("no process %d on this host", pid)
	}
	if t.PerfPID != 0 {
		return underload.Perf(pid, s.tool, nil, s.log), fmt.Sprintf("pid%d", pid), 0, nil
	}
	settle, err := jitSettle(t.JITSettleSeconds)
	if err != nil {
		return nil, "", 0, err
	}
	return underload.JVM(jvm.Options{PID: pid, Settings: "profile", AsyncProfiler: !t.JFROnly, ProfilerEvent: "cpu", Settle: settle, Logger: s.log}),
		fmt.Sprintf("jvm%d", pid), settle, nil
}

func (s *server) collectBundle(ctx context.Context, t liveTarget, seconds float64, output string) (string, error) {
	c, name, _, err := s.collector(t)
	if err != nil {
		return "", err
	}
	d, err := window(seconds, defaultWindow)
	if err != nil {
		return "", err
	}
	dir, err := s.bundleDir(output, name)
	if err != nil {
		return "", err
	}
	var m *bundle.Manifest
	if c != nil {
		m, err = c(ctx, dir, d)
	} else {
		m, err = collect.Collect(ctx, collect.Options{Target: t.Target, Duration: d, OutDir: dir, Logger: s.log})
	}
	if err != nil {
		if m != nil {
			return "", fmt.Errorf("collect %s: %w (a partial bundle is in %s)", name, err, dir)
		}
		return "", fmt.Errorf("collect %s: %w", name, err)
	}
	return dir, nil
}

func (s *server) collect(ctx context.Context, in collectInput) (*collectAnswer, error) {
	dir, err := s.collectBundle(ctx, in.liveTarget, in.DurationSeconds, in.Output)
	if err != nil {
		return nil, err
	}
	m, err := bundle.ReadManifest(dir)
	if err != nil {
		return nil, err
	}
	return manifestAnswer(dir, m), nil
}

func manifestAnswer(dir string, m *bundle.Manifest) *collectAnswer {
	a := &collectAnswer{Bundle: dir, Items: []string{}, Partial: m.Partial}
	for _, it := range m.Items {
		if it.Error == "" {
			a.Items = append(a.Items, it.Name)
		}
	}
	for _, it := range m.Failed() {
		a.Failed = append(a.Failed, clip(it.Name+": "+it.Error, factChars))
	}
	return a
}

func loadConfig(url string, concurrency int, rate float64, d time.Duration) (load.Config, error) {
	switch {
	case concurrency == 0:
		concurrency = 8
	case concurrency < 0 || concurrency > maxWorkers:
		return load.Config{}, fmt.Errorf("concurrency %d out of range 1..%d", concurrency, maxWorkers)
	}
	if rate < 0 {
		return load.Config{}, fmt.Errorf("rate %g: want requests per second > 0, or none for a closed loop", rate)
	}
	if !strings.HasPrefix(url, "http://") && !strings.HasPrefix(url, "https://") {
		return load.Config{}, fmt.Errorf("load URL %q: want http:// or https://", url)
	}
	return load.Config{URL: url, Concurrency: concurrency, Rate: rate, Duration: d}, nil
}

func (s *server) run(ctx context.Context, in runInput) (*runAnswer, error) {
	c, name, lead, err := s.collector(in.liveTarget)
	if err != nil {
		return nil, err
	}
	if err := s.checkTarget(in.Load); err != nil {
		return nil, err
	}
	d, err := window(in.DurationSeconds, defaultWindow)
	if err != nil {
		return nil, err
	}
	warmup, err := window(in.WarmupSeconds, 2*time.Second)
	if err != nil {
		return nil, fmt.Errorf("warm-up: %w", err)
	}
	cfg, err := loadConfig(in.Load, in.Concurrency, in.Rate, d)
	if err != nil {
		return nil, err
	}
	dir, err := s.bundleDir(in.Output, name)
	if err != nil {
		return nil, err
	}
	res, err := underload.Run(ctx, underload.Options{PprofURL: in.Target, Collect: c, Target: name, Load: cfg, Warmup: warmup, Lead: lead, BundleDir: dir,
		Logger: s.log, Messages: io.Discard})
	if err != nil {
		return nil, err
	}
	rep, err := diagnose.Run(ctx, diagnose.Request{Paths: []string{dir}, Tool: s.tool})
	if err != nil {
		return nil, err
	}
	if err := diagnose.SaveReports(dir, rep); err != nil {
		return nil, err
	}
	a := &runAnswer{Load: clip(res.Load.String(), summaryChars)}
	a.Bundle = dir
	return a, summarise(rep, &a.diagnoseAnswer, a, 0)
}

// verifyLoad is one side's load: requests, or the load command.
func verifyLoad(in verifyInput, url string, d time.Duration) (load.Config, error) {
	if in.LoadCmd == "" {
		if in.Units != 0 || in.Unit != "" {
			return load.Config{}, errors.New("units and unit go with load_cmd")
		}
		return loadConfig(url, in.Concurrency, 0, d)
	}
	switch {
	case in.Units < 1:
		return load.Config{}, errors.New("load_cmd needs units: the units of work one run of the command does")
	case in.Concurrency != 0:
		return load.Config{}, errors.New("concurrency does not apply to load_cmd: the command sets its own")
	case !strings.HasPrefix(url, "tcp://"):
		return load.Config{}, fmt.Errorf("with load_cmd the targets are tcp://host:port, not %q", url)
	}
	return load.Config{URL: url, Command: in.LoadCmd, UnitsPerRun: in.Units, Unit: in.Unit, Duration: d}, nil
}

// jitSettle is the JIT settle bound a tool was given in seconds
// (jvm.DefaultSettle when absent).
func jitSettle(seconds *float64) (time.Duration, error) {
	if seconds == nil {
		return jvm.DefaultSettle, nil
	}
	if v := *seconds; v < 0 || v > jvm.MaxSettle.Seconds() || math.IsNaN(v) {
		return 0, fmt.Errorf("jit_settle_seconds %g out of range 0..%g", v, jvm.MaxSettle.Seconds())
	}
	return time.Duration(*seconds * float64(time.Second)), nil
}

func (s *server) verify(ctx context.Context, in verifyInput) (*verifyAnswer, error) {
	if in.Before == in.After {
		return nil, errors.New("before and after are the same URL; give each version its own address")
	}
	for _, u := range []string{in.Before, in.After} {
		if err := s.checkTarget(u); err != nil {
			return nil, err
		}
	}
	rounds := in.Rounds
	switch {
	case rounds == 0:
		rounds = 4
	case rounds < 2 || rounds > 20:
		return nil, fmt.Errorf("rounds %d out of range 2..20 (one round has no confidence interval)", rounds)
	}
	d, err := window(in.DurationSeconds, 3*time.Second)
	if err != nil {
		return nil, err
	}
	warmup, err := window(in.WarmupSeconds, time.Second)
	if err != nil {
		return nil, fmt.Errorf("warm-up: %w", err)
	}
	settle, err := jitSettle(in.JITSettleSeconds)
	if err != nil {
		return nil, err
	}
	// Each JVM side may be loaded for up to settle before the rounds.
	if total := time.Duration(rounds*2)*(d+warmup) + 2*settle; total > maxVerify {
		return nil, fmt.Errorf("verify would take up to %s, over %s: fewer rounds, shorter measurements or a shorter jit_settle_seconds", total, maxVerify)
	}
	if in.MinChange < 0 || in.MinChange >= 1 {
		return nil, fmt.Errorf("min_change %g out of range 0..1", in.MinChange)
	}
	before, err := verifyLoad(in, in.Before, d)
	if err != nil {
		return nil, err
	}
	after, err := verifyLoad(in, in.After, d)
	if err != nil {
		return nil, err
	}
	v, err := verify.Run(ctx, verify.Options{Before: before, After: after,
		PIDs:   [2]int{verify.LocalPID(in.Before), verify.LocalPID(in.After)},
		Rounds: rounds, Warmup: warmup, MinChange: in.MinChange, Settle: settle})
	if err != nil {
		return nil, err
	}
	a := &verifyAnswer{Verdict: v.Verdict, Why: clip(v.Why, summaryChars), Method: v.Method, Rounds: len(v.Rounds), Ratios: []ratio{}, JITSettle: v.JITSettle}
	for _, r := range v.Ratios {
		a.Ratios = append(a.Ratios, ratio{Figure: r.Figure, Ratio: round4(r.Estimate), Low: round4(r.Low), High: round4(r.High), Change: r.Change})
	}
	for _, w := range v.Warnings[:min(len(v.Warnings), warnings)] {
		a.Warnings = append(a.Warnings, clip(w, summaryChars))
	}
	for _, r := range v.Rounds {
		for i, res := range []*load.Result{r.Before, r.After} {
			if res == nil {
				continue
			}
			m := &a.Sides[i]
			n := float64(len(v.Rounds))
			m.Throughput += res.Throughput / n
			m.P50Millis += res.Latency.P50.Seconds() * 1e3 / n
			m.P99Millis += res.Latency.P99.Seconds() * 1e3 / n
			m.Errors += res.Errors
		}
	}
	for i := range a.Sides {
		m := &a.Sides[i]
		m.Throughput, m.P50Millis, m.P99Millis = round4(m.Throughput), round4(m.P50Millis), round4(m.P99Millis)
	}
	return a, nil
}
