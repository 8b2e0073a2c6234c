package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/prometheus/procfs"
	"github.com/spf13/cobra"

	"github.com/perfdoctor/perfdoctor/collect/system"
	"github.com/perfdoctor/perfdoctor/load"
)

// exitRegression is verify's exit code for a significant regression.
const exitRegression = 4

// regressionError carries exitRegression without printing more.
type regressionError struct{ msg string }

func (e regressionError) Error() string { return e.msg }

func (a *app) verifyCommand() *cobra.Command {
	var (
		f                    loadFlags
		before, after        string
		beforeCmd, afterCmd  string
		rounds               int
		warmup, readyTimeout time.Duration
		minChange            float64
		format               string
	)
	cmd := &cobra.Command{
		Use:   "verify --before URL --after URL",
		Short: "Compare two versions of a service under the same load, with confidence intervals",
		Long: `Verify loads the before and after targets the same way, alternating them over
several rounds (before/after, then after/before, ...) so slow drift of the
machine cancels, and reports the after/before ratios of throughput and latency
(p50, p99) with 95% confidence intervals from a paired t-test on the per-round
log ratios. The verdict is faster, slower or no significant change; the exit
code is 4 on a significant regression (lower throughput or higher p99), for CI.

The targets are running services, or --before-cmd/--after-cmd start them: each
command runs under sh -c in its own process group, verify waits until its URL
accepts connections, and stops exactly the processes it started (SIGTERM to
the group, SIGKILL after 5s) when done or interrupted.`,
		Example: `  perfdoctor verify --before http://127.0.0.1:8080/ --after http://127.0.0.1:8081/
  perfdoctor verify --rounds 6 -d 5s \
    --before-cmd './old -listen 127.0.0.1:9001' --before http://127.0.0.1:9001/ \
    --after-cmd  './new -listen 127.0.0.1:9002' --after  http://127.0.0.1:9002/`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if before == "" || after == "" {
				return usageError{errors.New("verify needs --before URL and --after URL")}
			}
			if before == after {
				return usageError{errors.New("--before and --after are the same URL; give each version its own address")}
			}
			if rounds < 2 || rounds > 100 {
				return usageError{fmt.Errorf("--rounds %d out of range 2..100 (one round has no confidence interval)", rounds)}
			}
			if warmup < 0 || warmup > load.MaxDuration {
				return usageError{fmt.Errorf("--warmup %s out of range", warmup)}
			}
			if format != "text" && format != "json" {
				return usageError{fmt.Errorf("--format %q: want text or json", format)}
			}
			cfgB, err := f.config(cmd, before)
			if err != nil {
				return err
			}
			cfgA, err := f.config(cmd, after)
			if err != nil {
				return err
			}
			restore, err := f.limitProcs()
			if err != nil {
				return err
			}
			defer restore()
			ctx := cmd.Context()
			for _, s := range []struct{ name, command, url string }{{"before", beforeCmd, before}, {"after", afterCmd, after}} {
				if s.command == "" {
					continue
				}
				p, err := startService(ctx, s.name, s.command, s.url, readyTimeout, a)
				if err != nil {
					return err
				}
				defer p.stop()
			}
			pids := [2]int{localPID(before), localPID(after)}
			v, err := runVerify(ctx, a, cfgB, cfgA, pids, rounds, warmup, minChange)
			if err != nil {
				return err
			}
			if format == "json" {
				if err := writeJSON(a.stdout, v); err != nil {
					return err
				}
			} else {
				printVerify(a.stdout, v)
			}
			if ctx.Err() != nil {
				return errInterrupted
			}
			if v.Verdict == verdictSlower {
				return regressionError{"significant regression: " + v.Why}
			}
			return nil
		},
	}
	f.register(cmd, 5*time.Second)
	cmd.Flags().StringVar(&before, "before", "", "URL of the version before the change")
	cmd.Flags().StringVar(&after, "after", "", "URL of the version after the change")
	cmd.Flags().StringVar(&beforeCmd, "before-cmd", "", "command that starts the before version (run with sh -c)")
	cmd.Flags().StringVar(&afterCmd, "after-cmd", "", "command that starts the after version (run with sh -c)")
	cmd.Flags().IntVar(&rounds, "rounds", 5, "rounds; each measures both versions once")
	cmd.Flags().DurationVar(&warmup, "warmup", time.Second, "load before each measurement, not counted")
	cmd.Flags().DurationVar(&readyTimeout, "ready-timeout", 30*time.Second, "how long a started command may take to accept connections")
	cmd.Flags().Float64Var(&minChange, "min-change", 0, "ignore significant changes smaller than this fraction (e.g. 0.03)")
	cmd.Flags().StringVar(&format, "format", "text", "output: text or json")
	return cmd
}

const (
	verdictFaster = "faster"
	verdictSlower = "slower"
	verdictSame   = "no significant change"
)

// verifyResult is verify's output.
type verifyResult struct {
	Before     string      `json:"before"`
	After      string      `json:"after"`
	Rounds     []roundPair `json:"rounds"`
	Throughput load.Ratio  `json:"-"`
	P50, P99   load.Ratio  `json:"-"`
	CPU        load.Ratio  `json:"-"` // the targets' CPU time per request, when their processes are local
	Ratios     []ratioJSON `json:"ratios"`
	Verdict    string      `json:"verdict"`
	Why        string      `json:"why,omitempty"`
	Method     string      `json:"method"`
	LoadAvg    float64     `json:"load_average"`
	Warnings   []string    `json:"warnings,omitempty"`
}

type roundPair struct {
	Round  int          `json:"round"`
	First  string       `json:"first"` // "before" or "after"
	Before *load.Result `json:"before"`
	After  *load.Result `json:"after"`
	// The target processes' CPU time per request, in microseconds (from
	// /proc, for local targets), 0 when unknown.
	BeforeCPU float64 `json:"before_cpu_us_per_request,omitempty"`
	AfterCPU  float64 `json:"after_cpu_us_per_request,omitempty"`
}

type ratioJSON struct {
	Figure   string  `json:"figure"`
	Estimate float64 `json:"ratio"`
	Low      float64 `json:"ci95_low"`
	High     float64 `json:"ci95_high"`
	Change   string  `json:"change"` // "better", "worse", "none"
}

// runVerify measures both versions over rounds, alternating which goes
// first, and judges the paired ratios.
func runVerify(ctx context.Context, a *app, before, after load.Config, pids [2]int, rounds int, warmup time.Duration, minChange float64) (*verifyResult, error) {
	v := &verifyResult{Before: before.URL, After: after.URL,
		Method: "paired t-test on per-round log ratios (after/before), 95% interval, rounds alternate their order"}
	// measure loads one version; cpu is the target process's CPU time per
	// request in microseconds, 0 when its process is not known.
	measure := func(cfg load.Config, pid int) (res *load.Result, cpu float64, err error) {
		if warmup > 0 {
			w := cfg
			w.Duration, w.Progress = warmup, nil
			if _, err := load.Run(ctx, w); err != nil {
				return nil, 0, err
			}
		}
		cpu0, cpuOK := processCPU(pid)
		res, err = load.Run(ctx, cfg)
		if err != nil {
			return nil, 0, err
		}
		if res.Requests > 0 && res.Errors == res.Requests {
			return nil, 0, fmt.Errorf("%s: every request failed (%s)", cfg.URL, res.ErrorKinds())
		}
		if cpu1, ok := processCPU(pid); ok && cpuOK && res.Requests > 0 {
			cpu = (cpu1 - cpu0) * 1e6 / float64(res.Requests)
		}
		return res, cpu, nil
	}
	for r := range rounds {
		// got[0] is before, got[1] after; odd rounds measure after first.
		p := roundPair{Round: r + 1, First: "before"}
		got := []*load.Result{nil, nil}
		cpu := []float64{0, 0}
		cfgs := []load.Config{before, after}
		sequence := []int{0, 1}
		if r%2 == 1 {
			sequence = []int{1, 0}
			p.First = "after"
		}
		for _, i := range sequence {
			res, c, err := measure(cfgs[i], pids[i])
			if err != nil {
				return nil, err
			}
			got[i], cpu[i] = res, c
			if ctx.Err() != nil {
				break
			}
		}
		if ctx.Err() != nil || got[0] == nil || got[1] == nil {
			break // interrupted: judge the complete rounds only
		}
		p.Before, p.After = got[0], got[1]
		p.BeforeCPU, p.AfterCPU = cpu[0], cpu[1]
		v.Rounds = append(v.Rounds, p)
		fmt.Fprintf(a.stderr, "verify: round %d/%d: before %.0f req/s p99 %s, after %.0f req/s p99 %s\n", r+1, rounds,
			p.Before.Throughput, fmtD(p.Before.Latency.P99), p.After.Throughput, fmtD(p.After.Latency.P99))
		for _, res := range got {
			for _, w := range res.Warnings {
				if !contains(v.Warnings, w) {
					v.Warnings = append(v.Warnings, w)
				}
			}
		}
	}
	figs := func(get func(*load.Result) float64) (b, af []float64) {
		for _, p := range v.Rounds {
			b, af = append(b, get(p.Before)), append(af, get(p.After))
		}
		return b, af
	}
	v.Throughput = load.PairedRatio(figs(func(r *load.Result) float64 { return r.Throughput }))
	v.P50 = load.PairedRatio(figs(func(r *load.Result) float64 { return float64(r.Latency.P50) }))
	v.P99 = load.PairedRatio(figs(func(r *load.Result) float64 { return float64(r.Latency.P99) }))
	v.LoadAvg = load.LoadAverage()
	var cpuB, cpuA []float64
	for _, p := range v.Rounds {
		if p.BeforeCPU > 0 && p.AfterCPU > 0 {
			cpuB, cpuA = append(cpuB, p.BeforeCPU), append(cpuA, p.AfterCPU)
		}
	}
	cpuKnown := len(cpuB) == len(v.Rounds) && len(cpuB) >= 2
	if cpuKnown {
		v.CPU = load.PairedRatio(cpuB, cpuA)
	}

	// Throughput up is better; latency down is better.
	tp, p50, p99 := v.Throughput.Direction(minChange), -v.P50.Direction(minChange), -v.P99.Direction(minChange)
	for _, x := range []struct {
		name string
		r    load.Ratio
		dir  int
	}{{"throughput", v.Throughput, tp}, {"p50 latency", v.P50, p50}, {"p99 latency", v.P99, p99}, {"CPU/request", v.CPU, -v.CPU.Direction(minChange)}} {
		if x.name == "CPU/request" && !cpuKnown {
			continue
		}
		v.Ratios = append(v.Ratios, ratioJSON{x.name, x.r.Estimate, x.r.Low, x.r.High, map[int]string{1: "better", -1: "worse", 0: "none"}[x.dir]})
	}
	switch {
	case len(v.Rounds) < 2:
		v.Verdict, v.Why = verdictSame, "fewer than two complete rounds"
	case tp < 0 || p99 < 0:
		v.Verdict = verdictSlower
		v.Why = fmt.Sprintf("throughput %s, p99 latency %s (after/before)", v.Throughput, v.P99)
		if cpuKnown && v.CPU.Direction(minChange) < 0 {
			// Where the generator shares the CPUs and nothing caps the
			// service, a version that burns more CPU can serve more.
			v.Why += fmt.Sprintf("; but CPU per request is %s: with the load generator on the same CPUs and no CPU quota, throughput favours the version that takes more CPU", v.CPU)
		}
	case tp > 0 || p99 > 0 || p50 > 0:
		v.Verdict = verdictFaster
	default:
		v.Verdict = verdictSame
	}
	return v, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func printVerify(w io.Writer, v *verifyResult) {
	fmt.Fprintf(w, "before %s\nafter  %s\n", v.Before, v.After)
	fmt.Fprintf(w, "%5s  %6s  %12s %10s  %12s %10s\n", "round", "first", "before req/s", "p99", "after req/s", "p99")
	for _, p := range v.Rounds {
		fmt.Fprintf(w, "%5d  %6s  %12.0f %10s  %12.0f %10s\n", p.Round, p.First, p.Before.Throughput, fmtD(p.Before.Latency.P99),
			p.After.Throughput, fmtD(p.After.Latency.P99))
	}
	fmt.Fprintln(w, "after/before, 95% confidence interval:")
	for _, r := range v.Ratios {
		fmt.Fprintf(w, "  %-12s %.3fx [%.3f, %.3f]  %s\n", r.Figure, r.Estimate, r.Low, r.High, r.Change)
	}
	fmt.Fprintf(w, "verdict: %s", v.Verdict)
	if v.Why != "" && v.Verdict != verdictSlower {
		fmt.Fprintf(w, " (%s)", v.Why)
	}
	fmt.Fprintf(w, "\n(%s; load average %.2f)\n", v.Method, v.LoadAvg)
	for _, warn := range v.Warnings {
		fmt.Fprintf(w, "warning: %s\n", warn)
	}
}

// service is a command verify started, in its own process group.
type service struct {
	name string
	cmd  *exec.Cmd
	out  *tailBuffer
	done chan struct{}
}

// startService runs command under sh -c and waits until rawURL's host
// accepts TCP connections (for udp:// URLs, until the process has run for a
// second), failing early if the process exits.
func startService(ctx context.Context, name, command, rawURL string, timeout time.Duration, a *app) (*service, error) {
	u, err := url.Parse(rawURL)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("--%s %q: not a URL", name, rawURL)
	}
	// The port must be free before we start: otherwise an old process
	// would answer and we would measure the wrong thing.
	if u.Scheme != "udp" {
		if c, err := net.DialTimeout("tcp", hostPort(u), time.Second); err == nil {
			c.Close()
			return nil, fmt.Errorf("%s: %s already accepts connections before --%s-cmd started; stop what is listening there or use another port", name, u.Host, name)
		}
	}
	s := &service{name: name, out: &tailBuffer{max: 4096}, done: make(chan struct{})}
	s.cmd = exec.Command("sh", "-c", command)
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	s.cmd.Stdout, s.cmd.Stderr = s.out, s.out
	if a.verbose {
		s.cmd.Stdout, s.cmd.Stderr = io.MultiWriter(s.out, a.stderr), io.MultiWriter(s.out, a.stderr)
	}
	if err := s.cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	go func() { s.cmd.Wait(); close(s.done) }()
	a.log.Debug("started", "service", name, "pid", s.cmd.Process.Pid, "command", command)
	started := time.Now()
	deadline := started.Add(timeout)
	for {
		if u.Scheme == "udp" {
			// Nothing to connect to: give it a second.
			if time.Since(started) > time.Second {
				return s, nil
			}
		} else if c, err := net.DialTimeout("tcp", hostPort(u), 200*time.Millisecond); err == nil {
			c.Close()
			return s, nil
		}
		select {
		case <-s.done:
			return nil, fmt.Errorf("%s command exited before %s accepted connections (%s): %s", name, u.Host, s.cmd.ProcessState, s.out.lastLine())
		case <-ctx.Done():
			s.stop()
			return nil, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			s.stop()
			return nil, fmt.Errorf("%s: %s did not accept connections within %s", name, u.Host, timeout)
		}
	}
}

func hostPort(u *url.URL) string {
	if u.Port() != "" {
		return u.Host
	}
	if u.Scheme == "https" {
		return u.Host + ":443"
	}
	return u.Host + ":80"
}

// stop ends the service's process group (the shell and what it started):
// SIGTERM, then SIGKILL after 5s.
func (s *service) stop() {
	pgid := s.cmd.Process.Pid
	syscall.Kill(-pgid, syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(5 * time.Second):
		syscall.Kill(-pgid, syscall.SIGKILL)
		<-s.done
	}
}

// tailBuffer keeps the last max bytes written, for error messages.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = t.b[len(t.b)-t.max:]
	}
	return len(p), nil
}

func (t *tailBuffer) lastLine() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	lines := bytes.Split(bytes.TrimSpace(t.b), []byte("\n"))
	if len(lines) == 0 || len(lines[len(lines)-1]) == 0 {
		return "no output"
	}
	return string(lines[len(lines)-1])
}

// localPID is the process listening on rawURL's port on this host, or 0
// (remote, UDP, or not found): its CPU time then goes unmeasured.
func localPID(rawURL string) int {
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return 0
	}
	host, port, err := net.SplitHostPort(hostPort(u))
	if err != nil {
		return 0
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return 0
	}
	n, err := strconv.Atoi(port)
	if err != nil {
		return 0
	}
	pid, err := system.FindPIDByPort(system.Roots{}, n)
	if err != nil {
		return 0
	}
	return pid
}

// processCPU is the process's user and system CPU time in seconds.
func processCPU(pid int) (float64, bool) {
	if pid <= 0 {
		return 0, false
	}
	p, err := procfs.NewProc(pid)
	if err != nil {
		return 0, false
	}
	st, err := p.Stat()
	if err != nil {
		return 0, false
	}
	return st.CPUTime(), true
}
