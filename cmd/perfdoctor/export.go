package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/perfdoctor/perfdoctor/evidence"
	"github.com/perfdoctor/perfdoctor/evidence/export"
	"github.com/perfdoctor/perfdoctor/formats/folded"
	"github.com/perfdoctor/perfdoctor/internal/output"
)

func (a *app) exportCommand() *cobra.Command {
	var format, kind, sampleType, out, weights, perfEvent string
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
			ev, err := evidence.Load(cmd.Context(), evidence.LoadOptions{FoldedWeights: w, PerfEvent: perfEvent}, args...)
			if err != nil {
				return err
			}
			p, err := ev.PickProfile(kind)
			if errors.Is(err, evidence.ErrSeveralProfiles) {
				return usageError{fmt.Errorf("%w with --kind", err)}
			}
			if err != nil {
				return err
			}
			var buf bytes.Buffer
			if err := export.Write(&buf, format, p, sampleType); err != nil {
				return err
			}
			return output.Write(out, a.stdout, output.Shared, func(w io.Writer) error {
				_, err := w.Write(buf.Bytes())
				return err
			})
		},
	}
	cmd.Flags().StringVarP(&format, "format", "f", "folded", "output format: "+strings.Join(export.Formats, ", "))
	cmd.Flags().StringVar(&kind, "kind", "", "which profile: cpu, perf, allocs, heap, mutex, block, goroutine, exceptions, wall (default cpu, else the only one)")
	cmd.Flags().StringVar(&sampleType, "type", "", "sample type to weight stacks by, e.g. samples, cpu, alloc_space (default: the profile's default)")
	cmd.Flags().StringVarP(&out, "output", "o", "", "write to this file instead of stdout (a device, FIFO or link's target is written through, never replaced)")
	cmd.Flags().StringVar(&weights, "folded-weights", "auto", "what counts in folded input are: auto, samples or nanoseconds")
	cmd.Flags().StringVar(&perfEvent, "perf-event", "", "the event of multi-event perf script input to read as the perf profile (cycles:u, cpu-clock)")
	return cmd
}
