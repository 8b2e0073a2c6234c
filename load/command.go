package load

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os/exec"
	"strings"
	"time"

	"github.com/perfdoctor/perfdoctor/internal/supervise"
)

// ModeCommand is the mode of a load driven by an external command
// (Config.Command): a server's own benchmark tool (redis-benchmark, pgbench,
// a client the user wrote) doing a fixed amount of work per run.
const ModeCommand = "command"

// DefaultUnit names what a command load's units are when Config.Unit is
// empty.
const DefaultUnit = "request"

// commandRunGrace bounds how long the run in progress when the duration
// ends may go on: a command that hangs must not hold the caller.
const commandRunGrace = time.Minute

// runCommand repeats cfg.Command back to back until cfg.Duration has passed
// (the run in progress then finishes, within commandRunGrace) or ctx ends
// (the run in progress is stopped and not counted). Each complete run did
// cfg.UnitsPerRun units; throughput is the units of the successful runs
// over the time until the last of them ended, so it is exact, not
// estimated. A run that exits with an error counts its units as errors;
// when every run failed the result says so through AllFailed.
func runCommand(ctx context.Context, cfg Config) (*Result, error) {
	script, err := expandCommand(cfg.Command, cfg.URL)
	if err != nil {
		return nil, err
	}
	res := &Result{URL: cfg.URL, Mode: ModeCommand, Concurrency: 1, Command: cfg.Command,
		Unit: cfg.Unit, UnitsPerRun: cfg.UnitsPerRun, ErrorsByKind: map[string]int64{}}
	start := time.Now()
	res.Start = start
	cpu0 := processCPU()
	deadline := start.Add(cfg.Duration)
	var lastEnd time.Time
	var lastErr string
	for ctx.Err() == nil && time.Now().Before(deadline) {
		if cfg.MaxRequests > 0 && res.Requests >= cfg.MaxRequests {
			break
		}
		runCtx, cancel := context.WithTimeout(ctx, time.Until(deadline)+commandRunGrace)
		runStart := time.Now()
		ok, why := runOnce(runCtx, script)
		timedOut := runCtx.Err() == context.DeadlineExceeded
		cancel()
		if ctx.Err() != nil {
			res.Unfinished += cfg.UnitsPerRun // stopped by the caller: not counted
			break
		}
		end := time.Now()
		res.Runs++
		res.Requests += cfg.UnitsPerRun
		if ok {
			spreadRun(&res.Timeline, runStart.Sub(start), end.Sub(start), cfg.UnitsPerRun, func(s *Second, n int64) { s.OK += n })
			lastEnd = end
			continue
		}
		res.Errors += cfg.UnitsPerRun
		spreadRun(&res.Timeline, runStart.Sub(start), end.Sub(start), cfg.UnitsPerRun, func(s *Second, n int64) { s.Errors += n })
		kind := "exit"
		if timedOut {
			kind = KindTimeout
			why = fmt.Sprintf("still running %s after the load's end", commandRunGrace)
		}
		res.ErrorsByKind[kind] += cfg.UnitsPerRun
		lastErr = why
		if lastEnd.IsZero() {
			break // no run has worked yet: the command is wrong, not the server slow
		}
	}
	res.Interrupted = ctx.Err() != nil
	res.Duration = time.Since(start)
	if !lastEnd.IsZero() {
		// The units were done by the end of the last complete run.
		res.Throughput = float64(res.Requests-res.Errors) / lastEnd.Sub(start).Seconds()
	}
	res.commandErr = lastErr
	if lastErr != "" {
		res.Warnings = append(res.Warnings, fmt.Sprintf("the load command failed %d of %d runs; the last said: %s",
			res.Errors/max(cfg.UnitsPerRun, 1), res.Runs, lastErr))
	}
	if d := res.Duration.Seconds(); d > 0 {
		res.GeneratorCPU = (processCPU() - cpu0).Seconds() / d
	}
	res.LoadAverage = LoadAverage()
	return res, nil
}

// spreadRun adds a run's units to the timeline's seconds in proportion to
// the part of the run each second holds: a run of 160 lookups over 4 s did
// them across those seconds, not at its end, and a window's rate read from
// the timeline (the work accounting over a collection window) must see that.
// from and to are the run's start and end since the load's start.
func spreadRun(tl *[]Second, from, to time.Duration, units int64, add func(*Second, int64)) {
	last := int(to / time.Second)
	for len(*tl) <= last {
		*tl = append(*tl, Second{T: len(*tl)})
	}
	first := int(from / time.Second)
	span := (to - from).Seconds()
	if span <= 0 || first >= last {
		add(&(*tl)[last], units)
		return
	}
	var given int64
	for i := first; i < last; i++ {
		lo, hi := max(from, time.Duration(i)*time.Second), min(to, time.Duration(i+1)*time.Second)
		n := int64(float64(units) * (hi - lo).Seconds() / span)
		add(&(*tl)[i], n)
		given += n
	}
	add(&(*tl)[last], units-given) // the rounding's remainder with the last second
}

// runOnce runs script under sh -c in its own process group, stopping the
// group when ctx ends; it reports whether the run succeeded and, if not,
// the last line the command printed.
func runOnce(ctx context.Context, script string) (bool, string) {
	out := supervise.NewTail(4096)
	cmd := exec.Command("sh", "-c", script)
	cmd.Stdout, cmd.Stderr = out, out
	p, err := supervise.Start(cmd, true)
	if err != nil {
		return false, err.Error()
	}
	select {
	case <-p.Exited():
	case <-ctx.Done():
		p.Stop()
		return false, "stopped"
	}
	if st := p.State(); st != nil && !st.Success() {
		return false, fmt.Sprintf("%s: %s", st, out.LastLine())
	}
	return true, ""
}

// expandCommand replaces {url}, {addr}, {host} and {port} in command with
// the parts of the target URL, so one command line loads either side of a
// verify. Without a URL, the command may not use them.
func expandCommand(command, rawURL string) (string, error) {
	if !strings.Contains(command, "{") {
		return command, nil
	}
	if rawURL == "" {
		if strings.Contains(command, "{url}") || strings.Contains(command, "{addr}") || strings.Contains(command, "{host}") || strings.Contains(command, "{port}") {
			return "", errors.New("load: the load command names {url}, {addr}, {host} or {port} but no target address was given")
		}
		return command, nil
	}
	u, err := url.Parse(rawURL)
	if err != nil || u.Host == "" {
		return "", fmt.Errorf("load: target %q is not an address such as tcp://127.0.0.1:6379", rawURL)
	}
	host, port, err := net.SplitHostPort(u.Host)
	if err != nil {
		return "", fmt.Errorf("load: target %q has no port", rawURL)
	}
	return strings.NewReplacer("{url}", rawURL, "{addr}", u.Host, "{host}", host, "{port}", port).Replace(command), nil
}

// validateCommand checks a command load's settings.
func (cfg Config) validateCommand() (Config, error) {
	if cfg.UnitsPerRun < 1 {
		return cfg, fmt.Errorf("load: a load command needs the units of work each run does (%d given)", cfg.UnitsPerRun)
	}
	if cfg.Rate != 0 {
		return cfg, errors.New("load: a load command sets its own pace; --rate does not apply")
	}
	if cfg.Duration <= 0 || cfg.Duration > MaxDuration {
		return cfg, fmt.Errorf("load: duration %s out of range (0, %s]", cfg.Duration, MaxDuration)
	}
	if cfg.Unit == "" {
		cfg.Unit = DefaultUnit
	}
	if cfg.URL != "" {
		if _, err := expandCommand(cfg.Command, cfg.URL); err != nil {
			return cfg, err
		}
	}
	return cfg, nil
}
