package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/perfdoctor/perfdoctor/collect/store"
	"github.com/perfdoctor/perfdoctor/diagnose"
	"github.com/perfdoctor/perfdoctor/formats/folded"
	"github.com/perfdoctor/perfdoctor/report"
	"github.com/perfdoctor/perfdoctor/rules"
)

func (a *app) diagnoseCommand() *cobra.Command {
	var format, out, failOn, gcLog, foldedWeights, perfEvent string
	var sf storeFlags
	cmd := &cobra.Command{
		Use:   "diagnose PATH...",
		Short: "Diagnose a bundle, a directory of profiles, or profile files",
		Long: `Diagnose reads a bundle written by collect, a plain directory of profiles
(e.g. saved with curl; files are recognised by content, not name), or loose
files, runs the rule catalog and prints the findings ranked by the share of
CPU (or memory or latency) the fix can recover.

With --pyroscope URL --service NAME it reads the service's profiles from a
Pyroscope server instead (or with --otlp FILE from OTLP profiles files written
by the OpenTelemetry Collector's file exporter) (CPU, allocations, mutex and block, merged over
--from..--to across its instances, or one --instance); what a store does not
hold (runtime statistics, heap, goroutines, trace) is listed as not checked.`,
		Example: `  perfdoctor diagnose ./b1
  perfdoctor diagnose cpu.pb.gz allocs.pb.gz --format json
  GODEBUG=gctrace=1 ./service 2>&1 | perfdoctor diagnose --gctrace -
  perfdoctor diagnose --pyroscope http://pyroscope:4040 --service checkout --from 2h
  perfdoctor diagnose --otlp profiles.json --service checkout`,
		Args: func(cmd *cobra.Command, args []string) error {
			if sf.used() {
				if len(args) > 0 {
					return usageError{fmt.Errorf("give a bundle or a store (--pyroscope, --otlp), not both")}
				}
				return nil
			}
			if len(args) == 0 && !cmd.Flags().Changed("gctrace") {
				return usageError{fmt.Errorf("diagnose needs at least one PATH (a bundle directory or profile files)")}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if _, ok := report.Formats[format]; !ok {
				return usageError{fmt.Errorf("unknown --format %q (want one of: %s)", format, report.FormatNames())}
			}
			var threshold rules.Severity
			if failOn != "" {
				if err := threshold.UnmarshalText([]byte(failOn)); err != nil {
					return usageError{fmt.Errorf("--fail-on: %w (want info, low, medium or high)", err)}
				}
			}
			weights, err := folded.ParseWeights(foldedWeights)
			if err != nil {
				return usageError{fmt.Errorf("--folded-weights: %w", err)}
			}
			req := a.diagnoseRequest(args...)
			if sf.used() {
				rd, r, err := sf.open()
				if err != nil {
					return err
				}
				if req.Evidence, err = storeEvidence(cmd.Context(), rd, r, store.Series{Service: sf.service, Instance: sf.instance}); err != nil {
					return err
				}
				req.Paths = nil
			}
			req.Load.FoldedWeights = weights
			req.Load.PerfEvent = perfEvent
			switch gcLog {
			case "":
			case "-":
				req.Load.GCTrace, req.Load.GCTraceName = cmd.InOrStdin(), "-"
			default:
				f, err := os.Open(gcLog)
				if err != nil {
					return fmt.Errorf("--gctrace: %w", err)
				}
				defer f.Close()
				req.Load.GCTrace, req.Load.GCTraceName = f, gcLog
			}
			rep, err := diagnose.Run(cmd.Context(), req)
			if err != nil {
				return err
			}
			if err := report.Save(a.stdout, out, format, rep); err != nil {
				return err
			}
			if failOn != "" {
				for _, f := range rep.Findings {
					if f.Severity >= threshold {
						return findingsError{fmt.Sprintf("finding %s (%s) is %s, at or above --fail-on %s", f.Rule, f.Class, f.Severity, failOn)}
					}
				}
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&format, "format", "f", "text", "output format: "+report.FormatNames()+
		" (html: one self-contained page with flame graphs; markdown: for pull requests; sarif: SARIF 2.1.0 for code scanning)")
	cmd.Flags().StringVarP(&out, "output", "o", "", "write the report to this file instead of stdout")
	cmd.Flags().StringVar(&failOn, "fail-on", "", "exit with code 3 if a finding has this severity or higher (info, low, medium, high)")
	cmd.Flags().StringVar(&gcLog, "gctrace", "", "also read a GODEBUG=gctrace=1 log (the target's stderr) from this file, or - for stdin")
	cmd.Flags().StringVar(&foldedWeights, "folded-weights", "auto", "what the counts of folded stacks are: samples, nanoseconds (async-profiler --total), or auto (guess, and say so in the report)")
	sf.add(cmd.Flags(), true)
	cmd.Flags().StringVar(&perfEvent, "perf-event", "", "the event of multi-event perf script input to diagnose, as perf names it (cycles:u, cpu-clock); default: the on-CPU one, else the most sampled")
	return cmd
}
