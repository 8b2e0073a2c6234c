package main

import (
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/perfdoctor/perfdoctor/collect/store"
	"github.com/perfdoctor/perfdoctor/evidence"
	"github.com/perfdoctor/perfdoctor/facts"
	"github.com/perfdoctor/perfdoctor/internal/output"
	"github.com/perfdoctor/perfdoctor/report"
)

func (a *app) diffCommand() *cobra.Command {
	var format, out, kind string
	var failPct float64
	var sf storeFlags
	cmd := &cobra.Command{
		Use:   "diff A B",
		Short: "Compare two bundles or two profiles: what grew, what shrank",
		Long: `Diff compares the profiles of one kind in A (before) and B (after): two
bundles, two directories or two profile files. Each function's flat share
(time or bytes in the function itself) and cumulative share (with its
callees) is taken of its own profile's total, so runs of different lengths
compare. It lists the biggest growers and shrinkers, and the hot spots that
are new in B or gone from A; --format html draws a differential flame graph.

With --fail-on-regression PCT it exits with code 3 when any function's flat
or cumulative share grew by more than PCT percentage points.

With --pyroscope URL --service NAME (or --otlp FILE), A and B are two time
ranges of the service in the store, FROM..TO each (2h..1h 1h..now).`,
		Example: `  perfdoctor diff before/ after/
  perfdoctor diff old-cpu.pb.gz new-cpu.pb.gz --format html -o diff.html
  perfdoctor diff main/ pr/ --fail-on-regression 5
  perfdoctor diff --pyroscope http://pyroscope:4040 --service checkout 2h..1h 1h..now`,
		Args: exactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			write, ok := report.DiffFormats[format]
			if !ok {
				return usageError{fmt.Errorf("unknown --format %q (want one of: %s)", format, report.DiffFormatNames())}
			}
			failOn := cmd.Flags().Changed("fail-on-regression")
			if failOn && (failPct < 0 || failPct > 100) {
				return usageError{fmt.Errorf("--fail-on-regression %v: want percentage points between 0 and 100", failPct)}
			}
			load := func(arg string) (*evidence.Evidence, error) {
				return evidence.Load(cmd.Context(), evidence.LoadOptions{}, arg)
			}
			if sf.used() {
				rd, err := sf.reader()
				if err != nil {
					return err
				}
				now := time.Now()
				load = func(arg string) (*evidence.Evidence, error) {
					r, err := parseSpan(arg, now)
					if err != nil {
						return nil, err
					}
					return storeEvidence(cmd.Context(), rd, r, store.Series{Service: sf.service, Instance: sf.instance})
				}
			}
			evA, err := load(args[0])
			if err != nil {
				return fmt.Errorf("A: %w", err)
			}
			evB, err := load(args[1])
			if err != nil {
				return fmt.Errorf("B: %w", err)
			}
			d, err := facts.CompareEvidence(evA, evB, kind)
			if err != nil {
				return err
			}
			d.Tool = a.tool()
			regressed := failOn && d.CheckRegression(failPct/100)
			if err := output.Write(out, a.stdout, output.Shared, func(w io.Writer) error { return write(w, d) }); err != nil {
				return err
			}
			if regressed {
				return findingsError{d.Regression}
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&format, "format", "f", "text", "output format: "+report.DiffFormatNames())
	cmd.Flags().StringVarP(&out, "output", "o", "", "write the comparison to this file instead of stdout")
	cmd.Flags().StringVar(&kind, "kind", "", "profile kind to compare: cpu, allocs, heap, heap-start, mutex, block, goroutine (default: cpu, else the only kind both have)")
	sf.add(cmd.Flags(), true)
	_ = cmd.Flags().MarkHidden("from") // A and B are the ranges
	_ = cmd.Flags().MarkHidden("to")
	cmd.Flags().Float64Var(&failPct, "fail-on-regression", 0, "exit with code 3 if a function's share grew by more than this many percentage points")
	return cmd
}
