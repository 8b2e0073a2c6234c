// Package pgo makes a profile for Go's profile-guided optimisation
// (perfdoctor pgo): it takes the CPU profiles of one or more bundles
// (instances of a service, or windows of one), keeps only what the
// compiler reads (CPU samples with their call stacks: functions, files,
// lines and function start lines) and merges them into one profile that
// `go build -pgo` accepts.
package pgo

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/google/pprof/profile"

	"github.com/perfdoctor/perfdoctor/evidence"
)

// Advice is the Go PGO guide's advice (go.dev/doc/pgo) on profiles worth
// building with, printed with every profile written.
const Advice = `Use profiles representative of production: taken under the real traffic mix,
from several instances and times of day (merging them is what this command
does); a profile of a benchmark or a load test teaches the compiler only what
that load exercised. Commit the profile as default.pgo in the main package's
directory: go build uses it by itself (-pgo=auto, Go 1.21 and later). Refresh
it now and then: the compiler tolerates a profile of older source, which just
helps less. Expect 2-14% less CPU (the Go project's benchmarks, Go 1.22) and
longer builds; verify the gain with perfdoctor verify.`

// Source is one input's contribution.
type Source struct {
	Path    string
	Samples int64   // CPU samples kept
	Seconds float64 // CPU time in them
	Main    string  // the main module of the binary, when the bundle knows it
}

// Result is the merged profile and what went into it.
type Result struct {
	Profile  *profile.Profile
	Sources  []Source
	Warnings []string
}

// MinSamples is the CPU samples below which a profile says little about
// where the program spends its time (10 s of one busy core at 100 Hz).
const MinSamples = 1000

// Merge loads each path (a bundle, a directory of profiles, or a CPU
// profile file), trims its CPU profile to what PGO reads and merges them.
func Merge(paths []string) (*Result, error) {
	if len(paths) == 0 {
		return nil, errors.New("pgo: no input")
	}
	res := &Result{}
	var trimmed []*profile.Profile
	for _, path := range paths {
		ev, err := evidence.Load(context.Background(), evidence.LoadOptions{}, path)
		if err != nil {
			return nil, fmt.Errorf("pgo: %s: %w", path, err)
		}
		p := ev.Profile(evidence.CPU)
		if p == nil {
			return nil, fmt.Errorf("pgo: %s: no CPU profile", path)
		}
		t, err := Trim(p)
		if err != nil {
			return nil, fmt.Errorf("pgo: %s: %w", path, err)
		}
		src := Source{Path: path}
		for _, s := range t.Sample {
			src.Samples += s.Value[0]
			src.Seconds += float64(s.Value[1]) / 1e9
		}
		if src.Samples == 0 {
			return nil, fmt.Errorf("pgo: %s: the CPU profile has no samples (was the service idle?)", path)
		}
		if b := ev.Build(); b != nil {
			src.Main = b.Main
			if src.Main == "" {
				src.Main = b.MainPackage
			}
		}
		res.Sources = append(res.Sources, src)
		trimmed = append(trimmed, t)
	}
	merged, err := profile.Merge(trimmed)
	if err != nil {
		return nil, fmt.Errorf("pgo: merging: %w", err)
	}
	if err := merged.CheckValid(); err != nil {
		return nil, fmt.Errorf("pgo: merged profile: %w", err)
	}
	res.Profile = merged
	var total int64
	var mains []string
	for _, s := range res.Sources {
		total += s.Samples
		if s.Main != "" && !slices.Contains(mains, s.Main) {
			mains = append(mains, s.Main)
		}
	}
	if total < MinSamples {
		res.Warnings = append(res.Warnings, fmt.Sprintf("only %d CPU samples in all: profile longer (collect -d 60s) or merge more instances; below %d the hot paths are guesses", total, MinSamples))
	}
	if len(mains) > 1 {
		res.Warnings = append(res.Warnings, "the bundles come from different programs ("+strings.Join(mains, ", ")+"): a PGO profile is for one program")
	}
	return res, nil
}

// Trim keeps what the compiler reads from a Go CPU profile: the samples
// and CPU time of each stack, with functions, lines and function start
// lines; it drops labels (which can name users or requests), comments and
// other sample types. It fails on a profile that is not a Go CPU profile.
func Trim(p *profile.Profile) (*profile.Profile, error) {
	samples, cpu := -1, -1
	for i, st := range p.SampleType {
		switch {
		case st.Type == "samples" && st.Unit == "count":
			samples = i
		case st.Type == "cpu" && st.Unit == "nanoseconds":
			cpu = i
		}
	}
	if cpu < 0 || samples < 0 {
		var types []string
		for _, st := range p.SampleType {
			types = append(types, st.Type+"/"+st.Unit)
		}
		return nil, fmt.Errorf("not a Go CPU profile (sample types %s; want samples/count and cpu/nanoseconds)", strings.Join(types, ", "))
	}
	t := p.Copy()
	t.SampleType = []*profile.ValueType{{Type: "samples", Unit: "count"}, {Type: "cpu", Unit: "nanoseconds"}}
	t.DefaultSampleType = ""
	t.Comments, t.DropFrames, t.KeepFrames = nil, "", ""
	kept := t.Sample[:0]
	for _, s := range t.Sample {
		if s.Value[cpu] == 0 && s.Value[samples] == 0 {
			continue
		}
		s.Value = []int64{s.Value[samples], s.Value[cpu]}
		s.Label, s.NumLabel, s.NumUnit = nil, nil, nil
		kept = append(kept, s)
	}
	t.Sample = kept
	return t.Compact(), nil
}
