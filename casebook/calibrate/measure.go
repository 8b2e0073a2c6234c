// Package calibrate holds perfdoctor's gain estimates to what verify
// measures: for each casebook case it diagnoses the bad variant under load
// (the top finding's impact is the prediction), then loads the bad and the
// fixed variant in alternating rounds, as `perfdoctor verify` does, and
// compares the measured throughput and CPU-per-request ratios with what the
// model (model.go) predicts from the impact. cmd/calibrate runs it and
// writes the table into casebook/README.md.
package calibrate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/perfdoctor/perfdoctor/casebook/serve"
	"github.com/perfdoctor/perfdoctor/internal/supervise"
	"github.com/perfdoctor/perfdoctor/load"
	"github.com/perfdoctor/perfdoctor/verify"
)

// Options say how to measure one case.
type Options struct {
	Casebook, Perfdoctor string // the binaries
	// Window is the collection window on the bad variant (the e2e's 5 s by
	// default); Rounds, Duration and Warmup are verify's.
	Window           time.Duration
	Rounds           int
	Duration, Warmup time.Duration
	// WorkDir keeps the bad variant's bundle as WorkDir/<case>-bad; empty
	// uses a temporary directory removed afterwards.
	WorkDir string
}

// Finding is the part of a diagnosed finding the calibration reads.
type Finding struct {
	ID       string  `json:"id"`
	Rule     string  `json:"rule"`
	Class    string  `json:"class"`
	Severity string  `json:"severity"`
	Impact   float64 `json:"impact"`
	// ImpactRange is the least and the most the finding says its fix
	// recovers, when it states a range.
	ImpactRange *[2]float64 `json:"impact_range,omitempty"`
	// RemovesWork says the fix removes the work: its range has a floor
	// and no top (rules.Finding.RemovesWork).
	RemovesWork bool     `json:"removes_work,omitempty"`
	Resource    string   `json:"resource"`
	ImpactBasis string   `json:"impact_basis"`
	Growing     bool     `json:"growing,omitempty"`
	CausedBy    string   `json:"caused_by,omitempty"`
	Explains    []string `json:"explains,omitempty"`
	Cost        *struct {
		CPUClaimed float64 `json:"cpu_claimed,omitempty"`
		CPUOwned   float64 `json:"cpu_owned,omitempty"`
	} `json:"cost,omitempty"`
}

// Figure is one measured ratio (fixed/bad) with its 95% interval.
type Figure struct {
	Ratio float64 `json:"ratio"`
	Low   float64 `json:"ci95_low"`
	High  float64 `json:"ci95_high"`
}

func figure(r load.Ratio) *Figure {
	if r.N < 2 {
		return nil
	}
	return &Figure{r.Estimate, r.Low, r.High}
}

// Result is one case's prediction inputs and measurement: what cmd/calibrate
// saves as JSON, so the table can be regenerated without measuring again.
type Result struct {
	Case  string `json:"case"`
	Class string `json:"class"` // the case's class; "" for a control
	// AlsoFixed are the classes of the case's other problems, which its
	// fixed variant fixes as well (serve.Case.AlsoTop3).
	AlsoFixed []string `json:"also_fixed,omitempty"`
	// Findings are the bad variant's, in rank order.
	Findings []Finding `json:"findings"`
	// Throughput, CPU and P99 are fixed/bad over the verify rounds.
	Throughput *Figure `json:"throughput"`
	CPU        *Figure `json:"cpu_per_request,omitempty"`
	P99        *Figure `json:"p99,omitempty"`
	Rounds     int     `json:"rounds"`
	// BadCPU and GeneratorCPU are the bad variant's and the load
	// generator's CPU per request (µs), means over the rounds: the model
	// needs both when they share the CPUs.
	BadCPU       float64 `json:"bad_cpu_us_per_request,omitempty"`
	GeneratorCPU float64 `json:"generator_cpu_us_per_request,omitempty"`
	LoadAverage  float64 `json:"load_average"`
	Err          string  `json:"error,omitempty"`
}

// Top is the bad variant's first finding, or nil.
func (r *Result) Top() *Finding {
	if len(r.Findings) == 0 {
		return nil
	}
	return &r.Findings[0]
}

// Measure diagnoses the case's bad variant under load and then verifies bad
// against fixed. A failure is recorded in the result's Err, with what was
// measured before it.
func Measure(ctx context.Context, name string, o Options) *Result {
	res := &Result{Case: name}
	if err := measure(ctx, name, o, res); err != nil {
		res.Err = err.Error()
	}
	return res
}

func measure(ctx context.Context, name string, o Options, res *Result) error {
	c, ok := serve.Lookup(name)
	if !ok {
		return fmt.Errorf("case %q is not registered", name)
	}
	res.Class, res.AlsoFixed = c.Class, c.AlsoTop3
	bad, err := startVariant(ctx, o.Casebook, name, "bad")
	if err != nil {
		return err
	}
	defer bad.proc.Stop()
	fixed, err := startVariant(ctx, o.Casebook, name, "fixed")
	if err != nil {
		return err
	}
	defer fixed.proc.Stop()

	fs, err := diagnoseUnderLoad(ctx, c, bad, o)
	if err != nil {
		return err
	}
	res.Findings = fs

	v, err := verify.Run(ctx, verify.Options{
		Before: bad.load(c, o.Duration), After: fixed.load(c, o.Duration),
		PIDs:   [2]int{bad.proc.PID(), fixed.proc.PID()},
		Rounds: o.Rounds, Warmup: o.Warmup,
	})
	if err != nil {
		return fmt.Errorf("verify: %w", err)
	}
	res.Rounds, res.LoadAverage = len(v.Rounds), v.LoadAvg
	res.Throughput, res.P99, res.CPU = figure(v.Throughput), figure(v.P99), figure(v.CPU)
	for _, r := range v.Rounds {
		n := float64(len(v.Rounds))
		res.BadCPU += r.BeforeCPU / n
		if r.Before.Requests > 0 {
			res.GeneratorCPU += r.Before.GeneratorCPU * r.Before.Duration.Seconds() * 1e6 / float64(r.Before.Requests) / n
		}
	}
	if res.Throughput == nil {
		return errors.New("verify completed fewer than two rounds")
	}
	return nil
}

// variant is a running casebook process.
type variant struct {
	proc            *supervise.Process
	app, pprof, udp string
}

// load is the case's load on v, as the end-to-end tests apply it: closed
// loop, 8 workers unless the case asks for more, and for a UDP ingress one
// DNS-style query per datagram.
func (v *variant) load(c serve.Case, d time.Duration) load.Config {
	cfg := load.Config{URL: v.app, Concurrency: 8, Duration: d}
	if c.Concurrency > 0 {
		cfg.Concurrency = c.Concurrency
	}
	if v.udp != "" {
		cfg.URL, cfg.Body = "udp://"+v.udp, []byte("\x4a\x21 IN A api.payments.internal.example")
	}
	return cfg
}

// startVariant runs the casebook binary on loopback ports with the
// runtime's defaults (the bad variants depend on them).
func startVariant(ctx context.Context, bin, name, v string) (*variant, error) {
	cmd := exec.Command(bin, "-case", name, "-variant", v, "-listen", "127.0.0.1:0", "-pprof", "127.0.0.1:0")
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); k != "GOGC" && k != "GOMEMLIMIT" && k != "GOMAXPROCS" {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	p, line, err := supervise.StartLine(ctx, cmd, "ready ", 30*time.Second)
	if err != nil {
		return nil, fmt.Errorf("starting %s/%s: %w", name, v, err)
	}
	s := &variant{proc: p}
	for _, f := range strings.Fields(line) {
		k, val, _ := strings.Cut(f, "=")
		switch k {
		case "app":
			s.app = val
		case "pprof":
			s.pprof = val
		case "udp":
			s.udp = val
		}
	}
	if s.app == "" || s.pprof == "" {
		p.Stop()
		return nil, fmt.Errorf("%s/%s printed no addresses: %q", name, v, line)
	}
	return s, nil
}

// diagnoseUnderLoad collects a bundle from v with the perfdoctor binary
// while the case's load runs, as the end-to-end test does (1 s of warm-up,
// a heap series, load on past the window), and diagnoses it.
func diagnoseUnderLoad(ctx context.Context, c serve.Case, v *variant, o Options) ([]Finding, error) {
	dir := o.WorkDir
	if dir == "" {
		tmp, err := os.MkdirTemp("", "perfdoctor-calibrate")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(tmp)
		dir = tmp
	}
	bundle := filepath.Join(dir, c.Name+"-bad")
	os.RemoveAll(bundle)

	const warmup = time.Second
	lctx, cancel := context.WithCancel(ctx)
	loaded := make(chan error, 1)
	go func() {
		_, err := load.Run(lctx, v.load(c, warmup+o.Window+time.Minute))
		loaded <- err
	}()
	stopLoad := sync.OnceValue(func() error { cancel(); return <-loaded })
	defer stopLoad()
	select {
	case <-time.After(warmup):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	out, err := exec.CommandContext(ctx, o.Perfdoctor, "collect", v.pprof, "-d", o.Window.String(), "--heap-every", "1s", "-o", bundle).CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("perfdoctor collect: %w: %s", err, lastLine(out))
	}
	if err := stopLoad(); err != nil && !errors.Is(err, context.Canceled) {
		return nil, fmt.Errorf("load: %w", err)
	}
	return Diagnose(ctx, o.Perfdoctor, bundle)
}

// Diagnose runs `perfdoctor diagnose BUNDLE --format json` and returns the
// findings in rank order. cmd/calibrate also calls it on kept bundles, to
// score a rule change against measurements already made.
func Diagnose(ctx context.Context, perfdoctor, bundle string) ([]Finding, error) {
	var stderr strings.Builder
	diag := exec.CommandContext(ctx, perfdoctor, "diagnose", bundle, "--format", "json")
	diag.Stderr = &stderr
	js, err := diag.Output()
	if err != nil {
		return nil, fmt.Errorf("perfdoctor diagnose: %w: %s", err, lastLine([]byte(stderr.String())))
	}
	var rep struct{ Findings []Finding }
	if err := json.Unmarshal(js, &rep); err != nil {
		return nil, fmt.Errorf("diagnose JSON: %w", err)
	}
	return rep.Findings, nil
}

func lastLine(b []byte) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return lines[len(lines)-1]
}
