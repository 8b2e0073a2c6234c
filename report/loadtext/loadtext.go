// Package loadtext renders the load generator's results for a terminal:
// `perfdoctor load`'s wrk-style summary, the --find-max steps and verify's
// rounds and verdict.
package loadtext

import (
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/perfdoctor/perfdoctor/internal/human"
	"github.com/perfdoctor/perfdoctor/load"
	"github.com/perfdoctor/perfdoctor/verify"
)

// Latency rounds a latency for a table; "-" when there is none.
func Latency(d time.Duration) string {
	if d == 0 {
		return "-"
	}
	return human.RoundDuration(d).String()
}

// WriteResult writes a load result for a human, wrk-style.
func WriteResult(w io.Writer, r *load.Result) {
	if r.Mode == load.ModeCommand {
		writeCommandResult(w, r)
		return
	}
	if r.Mode == "open" {
		fmt.Fprintf(w, "%s: open loop at %g req/s over %d connections for %s\n", r.URL, r.Rate, r.Concurrency, r.Duration.Round(time.Millisecond))
	} else {
		fmt.Fprintf(w, "%s: closed loop, %d workers, %s\n", r.URL, r.Concurrency, r.Duration.Round(time.Millisecond))
	}
	if r.Interrupted {
		fmt.Fprintln(w, "  (interrupted: the figures cover the time until Ctrl-C)")
	}
	fmt.Fprintf(w, "  requests   %d (%d errors), %.1f successful req/s\n", r.Requests, r.Errors, r.Throughput)
	if len(r.ErrorsByKind) > 0 {
		fmt.Fprintf(w, "  errors     %s\n", r.ErrorKinds())
	}
	if r.Mode == "open" {
		fmt.Fprintf(w, "  sends      %d late by more than %s, %d never sent, %d unfinished at the end\n",
			r.LateSends, load.LateThreshold, r.Dropped, r.Unfinished)
	}
	row := func(name string, p load.Percentiles) {
		fmt.Fprintf(w, "  %-10s p50 %-9s p75 %-9s p90 %-9s p99 %-9s p99.9 %-9s p99.99 %-9s max %s\n", name,
			Latency(p.P50), Latency(p.P75), Latency(p.P90), Latency(p.P99), Latency(p.P999), Latency(p.P9999), Latency(p.Max))
	}
	row("latency", r.Latency)
	if r.Mode == "open" {
		row("service", r.Service)
		fmt.Fprintln(w, "  (latency counts from the due time for requests that waited for a connection, else from the send;\n   service always from the send)")
	}
	if len(r.Timeline) > 1 {
		fmt.Fprintln(w, "  second      ok/s   err/s      p50       p99       max")
		for _, s := range r.Timeline {
			fmt.Fprintf(w, "  %6d  %8d  %6d  %8s  %8s  %8s\n", s.T, s.OK, s.Errors, Latency(s.P50), Latency(s.P99), Latency(s.Max))
		}
	}
	fmt.Fprintf(w, "  generator  %.2f CPUs used; load average %.2f\n", r.GeneratorCPU, r.LoadAverage)
}

// writeCommandResult writes a --load-cmd run: units, not requests, and no
// latency (the command's own output has it).
func writeCommandResult(w io.Writer, r *load.Result) {
	target := ""
	if r.URL != "" {
		target = " on " + r.URL
	}
	fmt.Fprintf(w, "`%s`%s: %d runs of %d %ss, %s\n", r.Command, target, r.Runs, r.UnitsPerRun, r.Unit, r.Duration.Round(time.Millisecond))
	if r.Interrupted {
		fmt.Fprintln(w, "  (interrupted: the figures cover the time until Ctrl-C)")
	}
	fmt.Fprintf(w, "  %-10s %d (%d in failed runs), %.1f %ss/s\n", r.Unit+"s", r.Requests, r.Errors, r.Throughput, r.Unit)
	for _, warn := range r.Warnings {
		fmt.Fprintf(w, "  warning    %s\n", warn)
	}
	fmt.Fprintf(w, "  generator  %.2f CPUs used by perfdoctor itself; load average %.2f\n", r.GeneratorCPU, r.LoadAverage)
}

// WriteCapacity writes --find-max's steps and the highest rate that met
// the objective.
func WriteCapacity(w io.Writer, c *load.Capacity) {
	obj := c.Objective
	fmt.Fprintf(w, "%10s  %10s  %10s  %10s  %6s  %s\n", "rate", "answered", "p"+strconv.FormatFloat(obj.Percentile, 'g', -1, 64), "service", "errors", "verdict")
	for _, s := range c.Steps {
		verdict := "meets " + obj.String()
		if !s.Pass {
			verdict = "fails: " + s.Why
		}
		fmt.Fprintf(w, "%10.0f  %10.0f  %10s  %10s  %6d  %s\n", s.Rate, s.Result.Throughput, Latency(s.Value),
			Latency(s.Result.Service.P99), s.Result.Errors+s.Result.Dropped, verdict)
	}
	if c.Best > 0 {
		fmt.Fprintf(w, "highest rate meeting %s: %.0f req/s\n", obj, c.Best)
	} else {
		fmt.Fprintf(w, "no rate tried met %s\n", obj)
	}
}

// RoundLine is verify's progress line for one complete round.
func RoundLine(done, of int, p verify.Round) string {
	if p.Before.Mode == load.ModeCommand {
		return fmt.Sprintf("verify: round %d/%d: before %.1f %ss/s, after %.1f %ss/s", done, of,
			p.Before.Throughput, p.Before.Unit, p.After.Throughput, p.After.Unit)
	}
	return fmt.Sprintf("verify: round %d/%d: before %.0f req/s p99 %s, after %.0f req/s p99 %s", done, of,
		p.Before.Throughput, Latency(p.Before.Latency.P99), p.After.Throughput, Latency(p.After.Latency.P99))
}

// WriteVerify writes verify's rounds, ratios and verdict.
func WriteVerify(w io.Writer, v *verify.Result) {
	fmt.Fprintf(w, "before %s\nafter  %s\n", v.Before, v.After)
	for _, s := range v.JITSettle {
		state := "settled"
		if !s.Settled {
			state = fmt.Sprintf("was still compiling (%.2f of a core)", s.CompilerCores)
		}
		fmt.Fprintf(w, "%s: JVM pid %d, its JIT %s after %.0fs under load before the first round\n", s.Side, s.PID, state, s.Seconds)
	}
	if len(v.Rounds) > 0 && v.Rounds[0].Before.Mode == load.ModeCommand {
		unit := v.Rounds[0].Before.Unit + "s/s"
		fmt.Fprintf(w, "%5s  %6s  %14s  %14s\n", "round", "first", "before "+unit, "after "+unit)
		for _, p := range v.Rounds {
			fmt.Fprintf(w, "%5d  %6s  %14.1f  %14.1f\n", p.Round, p.First, p.Before.Throughput, p.After.Throughput)
		}
	} else {
		fmt.Fprintf(w, "%5s  %6s  %12s %10s  %12s %10s\n", "round", "first", "before req/s", "p99", "after req/s", "p99")
	}
	for _, p := range v.Rounds {
		if p.Before.Mode == load.ModeCommand {
			break
		}
		fmt.Fprintf(w, "%5d  %6s  %12.0f %10s  %12.0f %10s\n", p.Round, p.First, p.Before.Throughput, Latency(p.Before.Latency.P99),
			p.After.Throughput, Latency(p.After.Latency.P99))
	}
	fmt.Fprintln(w, "after/before, 95% confidence interval:")
	for _, r := range v.Ratios {
		fmt.Fprintf(w, "  %-12s %.3fx [%.3f, %.3f]  %s\n", r.Figure, r.Estimate, r.Low, r.High, r.Change)
	}
	fmt.Fprintf(w, "verdict: %s", v.Verdict)
	if v.Why != "" && v.Verdict != verify.Slower {
		fmt.Fprintf(w, " (%s)", v.Why)
	}
	fmt.Fprintf(w, "\n(%s; load average %.2f)\n", v.Method, v.LoadAvg)
	for _, warn := range v.Warnings {
		fmt.Fprintf(w, "warning: %s\n", warn)
	}
}
