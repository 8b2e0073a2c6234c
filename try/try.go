// Package try proves configuration-only prescriptions on the service
// itself (perfdoctor try): it starts the service's command, diagnoses it
// under load (or takes a given report), and for each finding whose fix is
// settings alone (GOGC, GOMEMLIMIT, GOMAXPROCS, GODEBUG, JVM options) runs
// the same load on the current and on the prescribed configuration in
// alternating rounds, each measurement a fresh process, with verify's
// statistics. The finding then carries what was measured against what was
// predicted, and the memory each configuration took.
package try

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/perfdoctor/perfdoctor/internal/human"
	"github.com/perfdoctor/perfdoctor/internal/progress"
	"github.com/perfdoctor/perfdoctor/load"
	"github.com/perfdoctor/perfdoctor/report"
	"github.com/perfdoctor/perfdoctor/rules"
	"github.com/perfdoctor/perfdoctor/underload"
	"github.com/perfdoctor/perfdoctor/verify"
)

// Options says what to start, load and try.
type Options struct {
	// Command starts the service (sh -c); try starts it for each
	// measurement and stops it after, with the prescribed settings added
	// to Environ for the prescribed configuration.
	Command string
	Environ []string // the current configuration's environment (os.Environ() when nil)
	// Load is the load for each measurement; its URL is where the service
	// answers, and its port must be free before each start.
	Load         load.Config
	Rounds       int
	Warmup       time.Duration
	ReadyTimeout time.Duration
	MinChange    float64

	// Report holds the findings to try. When nil, try diagnoses first:
	// it starts Command, warms it up, collects a bundle into BundleDir
	// from PprofURL while Load runs for Collect, and calls Diagnose.
	Report    *report.Report
	PprofURL  string
	BundleDir string
	Collect   time.Duration
	Diagnose  func(bundleDir string) (*report.Report, error)
	Progress  *progress.Line // the collection's progress; nil: none

	// Only, when set, names the finding IDs to try; else every finding
	// with a valid configuration fix is tried.
	Only []string

	Log      *slog.Logger
	Messages io.Writer // progress lines (stderr); nil: none
	Echo     io.Writer // the service's output; nil: kept only for errors
	OnRound  func(finding string, done, of int, r verify.Round)
}

// Outcome is one tried configuration.
type Outcome struct {
	Findings []string         // IDs of the findings that prescribe it
	Config   *rules.ConfigFix // as prescribed by the first of them
	Verify   *verify.Result   // before: current configuration; after: prescribed
	Trial    *rules.Trial
}

// Result is a try run: the report whose findings carry their trials, and
// the trials with verify's rounds.
type Result struct {
	Report   *report.Report
	Outcomes []Outcome
}

// Run diagnoses (unless o.Report is set) and tries every configuration fix.
// Interrupted, it returns what was measured so far with ctx's error.
func Run(ctx context.Context, o Options) (*Result, error) {
	if o.Environ == nil {
		o.Environ = os.Environ()
	}
	if o.Messages == nil {
		o.Messages = io.Discard
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.Progress == nil {
		o.Progress = progress.New(nil)
	}
	rep := o.Report
	if rep == nil {
		var err error
		if rep, err = diagnose(ctx, o); err != nil {
			return nil, err
		}
	}
	res := &Result{Report: rep}
	for _, c := range candidates(rep, o.Only) {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		fmt.Fprintf(o.Messages, "perfdoctor: try %s (%s): %d rounds of the current configuration against %s\n",
			c.Config, strings.Join(c.Findings, ", "), o.Rounds, c.Config)
		v, err := verify.Run(ctx, verify.Options{Before: o.Load, After: o.Load, Rounds: o.Rounds, Warmup: o.Warmup, MinChange: o.MinChange,
			Start: func(ctx context.Context, i int) (int, func(), error) {
				env, name := o.Environ, "current"
				if i == 1 {
					env, name = c.Config.Environ(o.Environ), "prescribed"
				}
				p, err := verify.StartTargetEnv(ctx, name, o.Command, env, o.Load.URL, o.ReadyTimeout, o.Echo, o.Log)
				if err != nil {
					return 0, nil, err
				}
				// The process answering on the port, not the shell
				// around it, is the one whose CPU and memory count.
				pid := verify.LocalPID(o.Load.URL)
				if pid == 0 {
					pid = p.PID()
				}
				if i == 1 {
					if err := applied(pid, c.Config); err != nil {
						p.Stop()
						return 0, nil, err
					}
				}
				return pid, p.Stop, nil
			},
			OnRound: func(done, of int, r verify.Round) {
				if o.OnRound != nil {
					o.OnRound(c.Findings[0], done, of, r)
				}
			},
		})
		if err != nil {
			return res, fmt.Errorf("trying %s: %w", c.Config, err)
		}
		c.Verify, c.Trial = v, Judge(c.Config, v)
		for _, id := range c.Findings {
			rep.Findings[slices.IndexFunc(rep.Findings, func(f rules.Finding) bool { return f.ID == id })].Tried = c.Trial
		}
		res.Outcomes = append(res.Outcomes, c)
	}
	return res, ctx.Err()
}

// applied checks that the process measured as the prescribed
// configuration has the settings in its environment: a command that resets
// them (env -u GOGC, a wrapper script) would otherwise be measured as if it
// had them.
func applied(pid int, c *rules.ConfigFix) error {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
	if err != nil {
		return nil // not readable here (another user's process): nothing to check
	}
	env := strings.Split(string(b), "\x00")
	for _, want := range c.Environ(nil) {
		name, value, _ := strings.Cut(want, "=")
		i := slices.IndexFunc(env, func(kv string) bool { return strings.HasPrefix(kv, name+"=") })
		have := ""
		if i >= 0 {
			have = strings.TrimPrefix(env[i], name+"=")
		}
		if (name == "JAVA_TOOL_OPTIONS" && !strings.Contains(have, value)) || (name != "JAVA_TOOL_OPTIONS" && have != value) {
			return fmt.Errorf("the prescribed configuration did not reach the service: process %d has %s=%q in its environment, not %q; the command must pass the environment on (no env -u or env -i)", pid, name, have, value)
		}
	}
	return nil
}

// diagnose starts the service in its current configuration and profiles
// it under the load.
func diagnose(ctx context.Context, o Options) (*report.Report, error) {
	if o.PprofURL == "" || o.Diagnose == nil || o.BundleDir == "" {
		return nil, fmt.Errorf("try: without a report, a pprof URL and a bundle directory are needed to diagnose first")
	}
	p, err := verify.StartTargetEnv(ctx, "service", o.Command, o.Environ, o.Load.URL, o.ReadyTimeout, o.Echo, o.Log)
	if err != nil {
		return nil, err
	}
	defer p.Stop()
	cfg := o.Load
	cfg.Duration = o.Collect
	if err := os.MkdirAll(filepath.Dir(o.BundleDir), 0o755); err != nil {
		return nil, fmt.Errorf("try: %w", err)
	}
	got, err := underload.Run(ctx, underload.Options{PprofURL: o.PprofURL, Load: cfg, Warmup: o.Warmup, BundleDir: o.BundleDir,
		Progress: o.Progress, Logger: o.Log, Messages: o.Messages})
	if err != nil {
		return nil, fmt.Errorf("try: profiling the current configuration: %w", err)
	}
	fmt.Fprintf(o.Messages, "perfdoctor: load: %s\n", got.Load)
	p.Stop()
	return o.Diagnose(o.BundleDir)
}

// candidates groups the findings with a valid configuration fix by the
// settings they prescribe (GC001 and GC002 may prescribe the same
// GOMEMLIMIT and GOGC): each distinct configuration is tried once.
func candidates(rep *report.Report, only []string) []Outcome {
	var out []Outcome
	for _, f := range rep.Findings {
		if f.Config == nil || f.Config.Validate() != nil || (len(only) > 0 && !slices.Contains(only, f.ID) && !slices.Contains(only, f.Rule)) {
			continue
		}
		i := slices.IndexFunc(out, func(c Outcome) bool { return c.Config.String() == f.Config.String() })
		if i < 0 {
			out = append(out, Outcome{Config: f.Config})
			i = len(out) - 1
		}
		out[i].Findings = append(out[i].Findings, f.ID)
	}
	return out
}

// Judge turns verify's after/before ratios into the finding's terms:
// gains against the prediction.
func Judge(c *rules.ConfigFix, v *verify.Result) *rules.Trial {
	t := &rules.Trial{Config: c.String(), Rounds: len(v.Rounds), PredictedGain: c.Gain, Verdict: v.Verdict,
		ThroughputGain: rules.Interval{Estimate: v.Throughput.Estimate - 1, Low: v.Throughput.Low - 1, High: v.Throughput.High - 1},
		P99Change:      rules.Interval{Estimate: v.P99.Estimate - 1, Low: v.P99.Low - 1, High: v.P99.High - 1},
	}
	if v.CPU.N >= 2 {
		// Less CPU per request is the gain: the ratio's interval flips.
		g := &rules.Interval{Estimate: 1 - v.CPU.Estimate, Low: 1 - v.CPU.High, High: 1 - v.CPU.Low}
		t.CPUGain = g
		switch {
		case c.Gain > g.High:
			t.Prediction = "over"
		case c.Gain < g.Low:
			t.Prediction = "under"
		default:
			t.Prediction = "within"
		}
	}
	for _, r := range v.Rounds {
		t.PeakRSSCurrent, t.PeakRSSPrescribed = max(t.PeakRSSCurrent, r.BeforePeakRSS), max(t.PeakRSSPrescribed, r.AfterPeakRSS)
	}
	return t
}

// WriteText writes each trial: the settings, the prediction against the
// measured CPU gain, throughput and p99, and the memory each took.
func (r *Result) WriteText(w io.Writer) {
	if len(r.Outcomes) == 0 {
		fmt.Fprintln(w, "no finding prescribes a configuration-only change: nothing to try")
		return
	}
	pct := func(x float64) string { return fmt.Sprintf("%+.1f%%", x*100) }
	in := func(i rules.Interval) string {
		return fmt.Sprintf("%s [%s, %s]", pct(i.Estimate), pct(i.Low), pct(i.High))
	}
	for _, o := range r.Outcomes {
		t := o.Trial
		var now []string
		for _, ch := range o.Config.Changes {
			if ch.Now != "" {
				now = append(now, ch.Name+"="+ch.Now)
			}
		}
		fmt.Fprintf(w, "%s: %s", strings.Join(o.Findings, ", "), t.Config)
		if len(now) > 0 {
			fmt.Fprintf(w, " (now %s)", strings.Join(now, " "))
		}
		fmt.Fprintf(w, ", %d rounds, prescribed/current with 95%% intervals:\n", t.Rounds)
		if t.CPUGain != nil {
			fmt.Fprintf(w, "  CPU per request  gain %s; predicted %s: %s\n", in(*t.CPUGain), pct(t.PredictedGain),
				map[string]string{"within": "within the interval", "over": "over-predicted", "under": "under-predicted"}[t.Prediction])
		} else {
			fmt.Fprintf(w, "  CPU per request  unknown (the service's process was not found); predicted gain %s\n", pct(t.PredictedGain))
		}
		fmt.Fprintf(w, "  throughput       %s\n  p99 latency      %s\n", in(t.ThroughputGain), in(t.P99Change))
		if t.PeakRSSCurrent > 0 && t.PeakRSSPrescribed > 0 {
			fmt.Fprintf(w, "  peak RSS         %s -> %s\n", human.Bytes(t.PeakRSSCurrent), human.Bytes(t.PeakRSSPrescribed))
		}
		fmt.Fprintf(w, "  verdict: %s\n", t.Verdict)
	}
}
