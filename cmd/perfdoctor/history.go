package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/perfdoctor/perfdoctor/diagnose"
	"github.com/perfdoctor/perfdoctor/history"
	"github.com/perfdoctor/perfdoctor/report/historytext"
)

func (a *app) historyCommand() *cobra.Command {
	var (
		db, format  string
		last        int
		regressions bool
		minDelta    float64
	)
	cmd := &cobra.Command{
		Use:   "history [SERVICE]",
		Short: "Show each finding class over time, or fail on a regression",
		Long: `History reads the diagnoses recorded with fleet --record or history record:
for each service or target, its runs and each finding class's impact in each.

With --regressions it compares every target's latest run with the runs before
it and exits with code 4 when a finding grew beyond its noise: by more than
3 standard deviations of the earlier runs and by at least --min-delta of the
resource (a class absent from a run counts as 0 there). For cron or CI.`,
		Example: `  perfdoctor history
  perfdoctor history checkout --last 20
  perfdoctor history --regressions --db postgres://perf@db/perf`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if format != "text" && format != "json" {
				return usageError{fmt.Errorf("unknown --format %q (want text or json)", format)}
			}
			if regressions && !cmd.Flags().Changed("last") {
				last = history.Baseline + 1 // the latest run and its whole baseline
			}
			store, err := history.Open(cmd.Context(), db)
			if err != nil {
				return err
			}
			defer store.Close()
			runs, err := store.Runs(cmd.Context(), firstArg(args), last)
			if err != nil {
				return err
			}
			if len(runs) == 0 {
				if len(args) == 1 {
					return fmt.Errorf("history %s: nothing recorded for %q", store.Where, args[0])
				}
				fmt.Fprintf(a.stderr, "history %s: nothing recorded yet (perfdoctor fleet --record, perfdoctor history record)\n", store.Where)
				return nil
			}
			if !regressions {
				if format == "json" {
					return writeJSON(a.stdout, runs)
				}
				return historytext.WriteRuns(a.stdout, runs)
			}
			regs := history.Regressions(runs, minDelta)
			if format == "json" {
				if regs == nil {
					regs = []history.Regression{}
				}
				if err := writeJSON(a.stdout, regs); err != nil {
					return err
				}
			} else {
				historytext.WriteRegressions(a.stdout, regs)
			}
			if len(regs) > 0 {
				return regressionError{fmt.Sprintf("%d findings grew beyond their noise", len(regs))}
			}
			return nil
		},
	}
	cmd.PersistentFlags().StringVar(&db, "db", "", "history database: a file (default "+defaultDBHelp()+") or postgres://user@host/db")
	cmd.Flags().StringVarP(&format, "format", "f", "text", "output format: text or json")
	cmd.Flags().IntVar(&last, "last", 10, "runs per target to show and to take the noise from (0: all)")
	cmd.Flags().BoolVar(&regressions, "regressions", false, "exit with code 4 when a finding grew beyond its noise in a target's latest run")
	cmd.Flags().Float64Var(&minDelta, "min-delta", history.DefaultMinDelta, "least growth of a finding's impact (a fraction of the resource) that counts as a regression")
	cmd.AddCommand(a.historyRecordCommand(&db))
	return cmd
}

func (a *app) historyRecordCommand(db *string) *cobra.Command {
	var target string
	cmd := &cobra.Command{
		Use:   "record PATH...",
		Short: "Diagnose a bundle (or profiles) and record the diagnosis in the history database",
		Example: `  perfdoctor collect http://127.0.0.1:6060 -o ./b1 && perfdoctor history record ./b1
  perfdoctor history record --target checkout-7f9 ./b2`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usageError{fmt.Errorf("history record needs at least one PATH (a bundle directory or profile files)")}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			rep, err := diagnose.Run(cmd.Context(), a.diagnoseRequest(args...))
			if err != nil {
				return err
			}
			if target == "" {
				target = rep.Inputs.Target
			}
			if target == "" {
				target = args[0]
			}
			store, err := history.Open(cmd.Context(), *db)
			if err != nil {
				return err
			}
			defer store.Close()
			id, err := store.Record(cmd.Context(), history.Run{
				Kind: history.KindTarget, Target: target, Tool: rep.Tool,
				Bundle: strings.Join(args, " "), Findings: history.FindingsOf(rep.Findings, 0),
			})
			if err != nil {
				return err
			}
			fmt.Fprintf(a.stderr, "recorded run %d of %s (%d findings) in %s\n", id, target, len(rep.Findings), store.Where)
			return nil
		},
	}
	cmd.Flags().StringVar(&target, "target", "", "name to record the run under (default the bundle's target)")
	return cmd
}
