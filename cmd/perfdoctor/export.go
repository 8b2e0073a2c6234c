package main

import (
	"bytes"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"

	"github.com/google/pprof/profile"
	"github.com/spf13/cobra"

	"github.com/perfdoctor/perfdoctor/evidence"
	"github.com/perfdoctor/perfdoctor/evidence/export"
	"github.com/perfdoctor/perfdoctor/formats/folded"
)

func (a *app) exportCommand() *cobra.Command {
	var format, kind, sampleType, out, weights string
	cmd := &cobra.Command{
		Use:   "export PATH...",
		Short: "Write a profile as perfdoctor read it: folded stacks, pprof or speedscope",
		Long: `Export reads its inputs as diagnose does (any format, gzipped or not) and
writes one profile as perfdoctor understood it, so the reading can be checked
with other tools: folded stacks for flamegraph.pl, profile.proto for
go tool pprof, or speedscope's JSON. A JFR recording, perf script output or
folded file comes out in the same form as a Go profile.`,
		Example: `  perfdoctor export rec.jfr --format folded | flamegraph.pl > cpu.svg
  perfdoctor export perf.txt --kind perf --format pprof -o perf.pb.gz && go tool pprof -top perf.pb.gz
  perfdoctor export ./bundle --kind allocs --type alloc_space --format speedscope -o allocs.json`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usageError{fmt.Errorf("export needs at least one PATH")}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if !slices.Contains(export.Formats, format) {
				return usageError{fmt.Errorf("unknown --format %q (want one of: %s)", format, strings.Join(export.Formats, ", "))}
			}
			w, err := folded.ParseWeights(weights)
			if err != nil {
				return usageError{fmt.Errorf("--folded-weights: %w", err)}
			}
			ev, err := evidence.LoadWith(evidence.LoadOptions{FoldedWeights: w}, args...)
			if err != nil {
				return err
			}
			p, err := pickProfile(ev, kind)
			if err != nil {
				return err
			}
			var buf bytes.Buffer
			if err := export.Write(&buf, format, p, sampleType); err != nil {
				return err
			}
			if out == "" {
				_, err := a.stdout.Write(buf.Bytes())
				return err
			}
			if err := os.WriteFile(out, buf.Bytes(), 0o644); err != nil {
				return fmt.Errorf("export: %w", err)
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&format, "format", "f", "folded", "output format: "+strings.Join(export.Formats, ", "))
	cmd.Flags().StringVar(&kind, "kind", "", "which profile: cpu, perf, allocs, heap, mutex, block, goroutine, exceptions, wall (default cpu, else the only one)")
	cmd.Flags().StringVar(&sampleType, "type", "", "sample type to weight stacks by, e.g. samples, cpu, alloc_space (default: the profile's default)")
	cmd.Flags().StringVarP(&out, "output", "o", "", "write to this file instead of stdout")
	cmd.Flags().StringVar(&weights, "folded-weights", "auto", "what counts in folded input are: auto, samples or nanoseconds")
	return cmd
}

// pickProfile returns the profile of the named kind, or with no kind the
// CPU profile, else the only profile there is.
func pickProfile(ev *evidence.Evidence, kind string) (*profile.Profile, error) {
	var kinds []string
	for k := range ev.Profiles {
		kinds = append(kinds, string(k))
	}
	sort.Strings(kinds)
	switch {
	case kind != "":
		if p := ev.Profile(evidence.Kind(kind)); p != nil {
			return p, nil
		}
		return nil, fmt.Errorf("no %s profile in the input (it has: %s)", kind, strings.Join(kinds, ", "))
	case ev.Profile(evidence.CPU) != nil:
		return ev.Profile(evidence.CPU), nil
	case len(kinds) == 1:
		return ev.Profile(evidence.Kind(kinds[0])), nil
	case len(kinds) == 0:
		return nil, fmt.Errorf("the input holds no profile to export")
	}
	return nil, usageError{fmt.Errorf("the input holds several profiles (%s): choose one with --kind", strings.Join(kinds, ", "))}
}
