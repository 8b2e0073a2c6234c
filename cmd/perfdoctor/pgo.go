package main

import (
	"bytes"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/perfdoctor/perfdoctor/internal/output"
	"github.com/perfdoctor/perfdoctor/pgo"
)

func (a *app) pgoCommand() *cobra.Command {
	var out string
	cmd := &cobra.Command{
		Use:   "pgo BUNDLE... -o default.pgo",
		Short: "Merge the CPU profiles of bundles into a profile for go build -pgo",
		Long: `Pgo writes a CPU profile for Go's profile-guided optimisation from one or more
bundles (or directories of profiles, or CPU profile files): their CPU profiles
trimmed to what the compiler reads (CPU samples with their stacks; labels,
comments and other sample types dropped) and merged into one, so several
instances and windows of a service count together.

` + pgo.Advice,
		Example: `  perfdoctor pgo b1 b2 b3 -o cmd/server/default.pgo
  go build -pgo=cmd/server/default.pgo ./cmd/server   # or just go build: default.pgo is found by itself`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usageError{fmt.Errorf("pgo needs at least one BUNDLE (or profile directory or CPU profile file)")}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if out == "" {
				return usageError{fmt.Errorf("pgo needs -o FILE (e.g. default.pgo in the main package's directory)")}
			}
			res, err := pgo.Merge(args)
			if err != nil {
				return err
			}
			var b bytes.Buffer
			if err := res.Profile.Write(&b); err != nil {
				return fmt.Errorf("pgo: %w", err)
			}
			if err := output.Write(out, a.stdout, output.Shared, func(w io.Writer) error {
				_, err := w.Write(b.Bytes())
				return err
			}); err != nil {
				return err
			}
			var samples int64
			var seconds float64
			for _, s := range res.Sources {
				samples += s.Samples
				seconds += s.Seconds
				fmt.Fprintf(a.stderr, "perfdoctor: %s: %d CPU samples (%.1fs of CPU)\n", s.Path, s.Samples, s.Seconds)
			}
			use := fmt.Sprintf("%s: %d CPU samples (%.1fs of CPU) from %d profiles, for go build -pgo=%s", out, samples, seconds, len(res.Sources), out)
			if out == output.Stdout {
				use = fmt.Sprintf("standard output: %d CPU samples (%.1fs of CPU) from %d profiles, for go build -pgo", samples, seconds, len(res.Sources))
			}
			fmt.Fprintf(a.display(out), "%s\n\n%s\n", use, pgo.Advice)
			for _, w := range res.Warnings {
				fmt.Fprintf(a.stderr, "perfdoctor: warning: %s\n", w)
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&out, "output", "o", "", "the profile to write, - for stdout (default.pgo in the main package's directory is used by go build by itself)")
	return cmd
}
