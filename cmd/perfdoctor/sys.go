package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/perfdoctor/perfdoctor/bundle"
	"github.com/perfdoctor/perfdoctor/collect"
	"github.com/perfdoctor/perfdoctor/collect/system"
	"github.com/perfdoctor/perfdoctor/diagnose"
	"github.com/perfdoctor/perfdoctor/evidence"
	"github.com/perfdoctor/perfdoctor/internal/progress"
	"github.com/perfdoctor/perfdoctor/report"
	"github.com/perfdoctor/perfdoctor/report/systext"
)

func (a *app) sysCommand() *cobra.Command {
	var (
		pid        int
		duration   time.Duration
		withPerf   bool
		noChildren bool
		format     string
		out        string
		roots      system.Roots
	)
	cmd := &cobra.Command{
		Use:   "sys",
		Short: "Check this machine (and a process) the way vmstat, mpstat, ss, sysctl and perf top would",
		Long: `Sys snapshots /proc at the start and end of a window and reports the
differences: per-CPU user/system/softirq/irq/steal/iowait time, NET_RX and
NET_TX soft interrupts per CPU, load against cores, TCP sockets by state in
total and per remote endpoint with the ephemeral-port ceiling, the network
sysctls, listen queue overflows, retransmits and SYN cookies, conntrack, and
with --pid the process's descriptors, threads, memory, context switches and
cgroup quota, throttling and memory, and where the CPU of the process and its
descendants went (a database's backends, a web server's workers: the process
named may be idle while its children work). Then it runs the operating system and
network rules. --perf also records stacks with kernel frames through perf.`,
		Example: `  perfdoctor sys
  perfdoctor sys --pid 4242 -d 30s --perf
  perfdoctor sys -d 10s -o ./host-bundle && perfdoctor diagnose ./host-bundle`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if format != "text" && format != "json" {
				return usageError{fmt.Errorf("unknown --format %q (want text or json)", format)}
			}
			if duration < 100*time.Millisecond || duration > collect.MaxDuration {
				return usageError{fmt.Errorf("--duration %s out of range (100ms to %s)", duration, collect.MaxDuration)}
			}
			if out != "" {
				if err := bundle.CheckDestination(out); err != nil {
					return err
				}
			}
			line := progress.New(os.Stderr)
			if noChildren && pid == 0 {
				return usageError{errors.New("--no-children goes with --pid")}
			}
			win, err := collect.ObserveWindow(cmd.Context(), collect.WindowOptions{PID: pid, Duration: duration, Perf: withPerf, NoChildren: noChildren, Roots: roots, Progress: line, Logger: a.log})
			line.Clear()
			if err != nil {
				return err
			}
			if out != "" {
				if err := win.WriteBundle(out, a.tool()+" sys"); err != nil {
					return err
				}
				fmt.Fprintf(a.stderr, "bundle written to %s\n", out)
			}
			return a.writeSys(cmd.Context(), a.stdout, format, win)
		},
	}
	cmd.Flags().IntVar(&pid, "pid", 0, "also observe this process and its descendants: CPU, descriptors, threads, memory, cgroup")
	cmd.Flags().BoolVar(&noChildren, "no-children", false, "with --pid, observe the process alone, not its children and their children")
	cmd.Flags().DurationVarP(&duration, "duration", "d", 10*time.Second, "window between the two snapshots")
	cmd.Flags().BoolVar(&withPerf, "perf", false, "record stacks with kernel frames through perf (the process with --pid, else every CPU)")
	cmd.Flags().StringVarP(&format, "format", "f", "text", "output format: text or json")
	cmd.Flags().StringVarP(&out, "output", "o", "", "also write the snapshots (and perf profile) as a bundle directory for diagnose")
	cmd.Flags().StringVar(&roots.Proc, "proc", "", "procfs root (default /proc)")
	cmd.Flags().StringVar(&roots.Sys, "sysfs", "", "sysfs root (default /sys)")
	cmd.Flags().MarkHidden("proc")
	cmd.Flags().MarkHidden("sysfs")
	return cmd
}

// writeSys diagnoses the window with the rules that read only /proc and
// perf evidence, and writes the summary and the findings.
func (a *app) writeSys(ctx context.Context, w io.Writer, format string, win *collect.Window) error {
	ev := evidence.NewBuilder("/proc").System(win.Start, win.End).Profile(evidence.Perf, win.Perf).ConfigFiles(win.Config).Evidence()
	if _, ok := ev.SystemDelta(); !ok {
		return fmt.Errorf("the two system snapshots are not in time order")
	}
	rep, err := diagnose.Run(ctx, diagnose.Request{Evidence: ev, Catalog: diagnose.SystemRules(), Tool: a.tool()})
	if err != nil {
		return err
	}
	sum := systext.Summarize(rep.Facts.Any("perfdoctor sys"), win.PerfErr)
	if format == "json" {
		return writeJSON(w, struct {
			Summary systext.Summary   `json:"summary"`
			Tree    *system.TreeUsage `json:"process_tree,omitempty"`
			Report  *report.Report    `json:"report"`
		}{sum, win.Tree, rep})
	}
	if err := systext.WriteText(w, sum); err != nil {
		return err
	}
	if win.Tree != nil {
		if _, err := fmt.Fprintf(w, "process tree: %s\n\n", win.Tree.Sentence()); err != nil {
			return err
		}
	}
	return report.WriteText(w, rep)
}
