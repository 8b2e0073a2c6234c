// Package export writes a profile perfdoctor read in the formats other
// tools read, so a reading can be checked against them: folded stacks for
// flamegraph.pl, profile.proto for `go tool pprof`, and speedscope's JSON.
package export

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/google/pprof/profile"
)

// Formats are the output formats Write knows.
var Formats = []string{"folded", "pprof", "speedscope"}

// Write writes p in the named format, weighting stacks by the sample type
// named typ ("" for the profile's default type).
func Write(w io.Writer, format string, p *profile.Profile, typ string) error {
	switch format {
	case "pprof":
		return p.Write(w)
	case "folded":
		return Folded(w, p, typ)
	case "speedscope":
		return Speedscope(w, p, typ)
	}
	return fmt.Errorf("unknown export format %q (want one of: %s)", format, strings.Join(Formats, ", "))
}

// valueIndex finds the sample type to weight by, as pprof picks it.
func valueIndex(p *profile.Profile, typ string) (int, error) {
	if typ == "" {
		typ = p.DefaultSampleType
	}
	if typ == "" {
		return len(p.SampleType) - 1, nil
	}
	for i, st := range p.SampleType {
		if st.Type == typ {
			return i, nil
		}
	}
	var have []string
	for _, st := range p.SampleType {
		have = append(have, st.Type)
	}
	return 0, fmt.Errorf("no sample type %q (the profile has %s)", typ, strings.Join(have, ", "))
}

// stack returns a sample's function names from the root to the leaf,
// inlined calls expanded as pprof shows them.
func stack(s *profile.Sample) []string {
	var out []string
	for i := len(s.Location) - 1; i >= 0; i-- {
		lines := s.Location[i].Line
		for j := len(lines) - 1; j >= 0; j-- {
			name := ""
			if fn := lines[j].Function; fn != nil {
				name = fn.Name
			}
			out = append(out, name)
		}
		if len(lines) == 0 {
			out = append(out, fmt.Sprintf("0x%x", s.Location[i].Address))
		}
	}
	return out
}

// Folded writes one line per distinct stack, "root;...;leaf value", sorted,
// as stackcollapse scripts do; flamegraph.pl draws it. Without a type it
// writes sample counts, as those scripts do, when the profile has them.
// Samples of zero weight are left out.
func Folded(w io.Writer, p *profile.Profile, typ string) error {
	if typ == "" {
		for _, st := range p.SampleType {
			if st.Type == "samples" && st.Unit == "count" {
				typ = st.Type
			}
		}
	}
	idx, err := valueIndex(p, typ)
	if err != nil {
		return err
	}
	sums := map[string]int64{}
	for _, s := range p.Sample {
		if v := s.Value[idx]; v != 0 {
			// A newline would end the line; ';' inside a name stays, as in
			// JVM signatures, which readers of folded stacks keep whole.
			names := stack(s)
			for i, n := range names {
				names[i] = strings.NewReplacer("\n", " ", "\r", " ").Replace(n)
			}
			sums[strings.Join(names, ";")] += v
		}
	}
	keys := make([]string, 0, len(sums))
	for k := range sums {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	bw := bufio.NewWriter(w)
	for _, k := range keys {
		fmt.Fprintf(bw, "%s %d\n", k, sums[k])
	}
	return bw.Flush()
}

// Speedscope writes the profile as one "sampled" profile of speedscope's
// file format (https://www.speedscope.app/file-format-schema.json).
func Speedscope(w io.Writer, p *profile.Profile, typ string) error {
	idx, err := valueIndex(p, typ)
	if err != nil {
		return err
	}
	type frame struct {
		Name string `json:"name"`
		File string `json:"file,omitempty"`
		Line int64  `json:"line,omitempty"`
	}
	type sampled struct {
		Type       string  `json:"type"`
		Name       string  `json:"name"`
		Unit       string  `json:"unit"`
		StartValue int64   `json:"startValue"`
		EndValue   int64   `json:"endValue"`
		Samples    [][]int `json:"samples"`
		Weights    []int64 `json:"weights"`
	}
	var frames []frame
	frameID := map[frame]int{}
	prof := sampled{Type: "sampled", Name: p.SampleType[idx].Type, Unit: speedscopeUnit(p.SampleType[idx].Unit),
		Samples: [][]int{}, Weights: []int64{}}
	for _, s := range p.Sample {
		v := s.Value[idx]
		if v == 0 {
			continue
		}
		var ids []int
		for i := len(s.Location) - 1; i >= 0; i-- {
			lines := s.Location[i].Line
			for j := len(lines) - 1; j >= 0; j-- {
				f := frame{Line: lines[j].Line}
				if fn := lines[j].Function; fn != nil {
					f.Name, f.File = fn.Name, fn.Filename
				}
				id, ok := frameID[f]
				if !ok {
					id = len(frames)
					frameID[f] = id
					frames = append(frames, f)
				}
				ids = append(ids, id)
			}
		}
		prof.Samples = append(prof.Samples, ids)
		prof.Weights = append(prof.Weights, v)
		prof.EndValue += v
	}
	if frames == nil {
		frames = []frame{}
	}
	doc := map[string]any{
		"$schema":  "https://www.speedscope.app/file-format-schema.json",
		"exporter": "perfdoctor",
		"name":     prof.Name,
		"shared":   map[string]any{"frames": frames},
		"profiles": []sampled{prof},
	}
	enc := json.NewEncoder(w)
	return enc.Encode(doc)
}

// speedscopeUnit maps a pprof unit onto speedscope's value units.
func speedscopeUnit(u string) string {
	switch u {
	case "nanoseconds", "microseconds", "milliseconds", "seconds", "bytes":
		return u
	}
	return "none"
}
