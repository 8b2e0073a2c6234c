package main

import (
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/perfdoctor/perfdoctor/internal/ruledocs"
	"github.com/perfdoctor/perfdoctor/rules/catalog"
)

func (a *app) rulesCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "rules",
		Short: "List the rule catalog",
		Args:  exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tCLASS\tNEEDS\tTITLE")
			for _, r := range catalog.All() {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", r.ID, r.Class, r.NeedsText(), r.Doc.Title)
			}
			return tw.Flush()
		},
	}
}

func (a *app) explainCommand() *cobra.Command {
	return &cobra.Command{
		Use:     "explain ID",
		Short:   "Explain a rule: what it detects, the evidence it reads, the fix",
		Example: "  perfdoctor explain GC001\n  perfdoctor explain connection-churn",
		Args:    exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			r := catalog.Lookup(args[0])
			if r == nil {
				return usageError{fmt.Errorf("no rule %q; `perfdoctor rules` lists them", args[0])}
			}
			_, err := fmt.Fprint(a.stdout, ruledocs.Page(r))
			return err
		},
	}
}
