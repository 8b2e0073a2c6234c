package otlpprofile_test

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/pprof/profile"
	"github.com/klauspost/compress/zstd"

	"github.com/perfdoctor/perfdoctor/formats/otlpprofile"
	"github.com/perfdoctor/perfdoctor/internal/otlptest"
	"github.com/perfdoctor/perfdoctor/internal/testprof"
)

// corpusBundle is a real Prometheus recorded under GOGC=20 (corpus/).
const corpusBundle = "../../corpus/go-prometheus-gogc-20/bad"

func readPprof(t *testing.T, name string) *profile.Profile {
	return testprof.Read(t, filepath.Join(corpusBundle, name))
}

// byFunction totals a sample type's values by leaf function.
func byFunction(p *profile.Profile, sampleType string) map[string]int64 {
	idx := 0
	for i, st := range p.SampleType {
		if st.Type == sampleType {
			idx = i
		}
	}
	out := map[string]int64{}
	for _, s := range p.Sample {
		name := "?"
		if len(s.Location) > 0 && len(s.Location[0].Line) > 0 {
			name = s.Location[0].Line[0].Function.Name
		}
		out[name] += s.Value[idx]
	}
	return out
}

// TestReadEveryLayout: a real CPU and allocation profile, as OTLP, in each
// of the file exporter's layouts, read back with the same stacks and
// values, the resource attributes and the kinds.
func TestReadEveryLayout(t *testing.T) {
	cpu, allocs := readPprof(t, "cpu.pb.gz"), readPprof(t, "allocs.pb.gz")
	req := otlptest.FromPprof(otlptest.Resource{Attributes: map[string]string{"service.name": "prometheus", "service.instance.id": "p-1"},
		Profiles: []*profile.Profile{cpu, allocs}})
	dir := t.TempDir()
	jsonPath, protoPath := filepath.Join(dir, "p.json"), filepath.Join(dir, "p.pb")
	if err := otlptest.WriteJSONLines(jsonPath, req, req); err != nil {
		t.Fatal(err)
	}
	if err := otlptest.WriteProto(protoPath, req); err != nil {
		t.Fatal(err)
	}
	protoData, _ := os.ReadFile(protoPath)
	jsonData, _ := os.ReadFile(jsonPath)
	enc, _ := zstd.NewWriter(nil)
	// Legacy compression: each message zstd-compressed, then size-prefixed.
	msg := enc.EncodeAll(protoData[4:], nil)
	perMessage := binary.BigEndian.AppendUint32(nil, uint32(len(msg)))
	perMessage = append(perMessage, msg...)
	layouts := map[string]struct {
		data []byte
		reqs int
	}{
		"json lines": {jsonData, 2}, "proto": {protoData, 1},
		"zstd per message":       {perMessage, 1},
		"zstd stream, json":      {enc.EncodeAll(jsonData, nil), 2},
		"zstd stream, proto":     {enc.EncodeAll(protoData, nil), 1},
		"json lines, crlf, last": {bytes.ReplaceAll(jsonData, []byte("\n"), []byte("\r\n")), 2},
	}
	for name, l := range layouts {
		t.Run(name, func(t *testing.T) {
			ps, err := otlpprofile.Read(bytes.NewReader(l.data))
			if err != nil {
				t.Fatal(err)
			}
			// cpu has 2 sample types, allocs 4: 6 profiles a request.
			if len(ps) != 6*l.reqs {
				t.Fatalf("%d profiles, want %d", len(ps), 6*l.reqs)
			}
			kinds := map[string]int{}
			for _, p := range ps[:6] {
				kinds[p.Kind]++
				if p.Resource["service.name"] != "prometheus" || p.Resource["service.instance.id"] != "p-1" {
					t.Errorf("resource %v", p.Resource)
				}
				orig := cpu
				if p.Kind != "cpu" {
					orig = allocs
				}
				st := p.Pprof.SampleType[0].Type
				want, got := byFunction(orig, st), byFunction(p.Pprof, st)
				for fn, v := range want {
					if got[fn] != v {
						t.Errorf("%s %s: %s = %d, want %d", p.Kind, st, fn, got[fn], v)
						break
					}
				}
				if p.Start.UnixNano() != orig.TimeNanos || p.Duration.Nanoseconds() != orig.DurationNanos {
					t.Errorf("%s: time %v+%v, want %d+%d", st, p.Start, p.Duration, orig.TimeNanos, orig.DurationNanos)
				}
			}
			// samples and cpu are both the CPU profile's; inuse_* are
			// not a kind perfdoctor reads from a store.
			if kinds["cpu"] != 2 || kinds["allocs"] != 2 || kinds[""] != 2 {
				t.Errorf("kinds %v", kinds)
			}
		})
	}
}

// TestReadBadInput: one-line errors, never a panic.
func TestReadBadInput(t *testing.T) {
	for name, data := range map[string][]byte{
		"not otlp json":   []byte(`{"resourceProfiles": 7}` + "\n"),
		"huge size":       {0xff, 0xff, 0xff, 0xff, 1, 2},
		"truncated":       {0, 0, 0, 9, 1, 2},
		"truncated size":  {0, 0},
		"garbage proto":   append([]byte{0, 0, 0, 4}, 0xff, 0xff, 0xff, 0xff),
		"bad zstd stream": {0x28, 0xb5, 0x2f, 0xfd, 0, 0, 0},
	} {
		_, err := otlpprofile.Read(bytes.NewReader(data))
		if err == nil {
			t.Errorf("%s: no error", name)
			continue
		}
		if strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: error of more than one line: %q", name, err)
		}
	}
}

// FuzzRead: whatever the bytes, Read returns profiles or an error.
func FuzzRead(f *testing.F) {
	f.Add([]byte("{}\n"))
	f.Add([]byte{0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		ps, err := otlpprofile.Read(bytes.NewReader(data))
		if err != nil {
			return
		}
		for _, p := range ps {
			if err := p.Pprof.CheckValid(); err != nil {
				t.Fatalf("invalid profile from valid input: %v", err)
			}
		}
	})
}
