// Package otlptest turns pprof profiles into OTLP profiles for tests, with
// the Collector's own pdata, and writes them as the Collector's file
// exporter lays out its files (JSON lines, or size-prefixed protobuf).
package otlptest

import (
	"encoding/binary"
	"fmt"
	"os"

	"github.com/google/pprof/profile"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pprofile"
)

// Resource is one resource's profiles: its attributes and pprof profiles,
// each sample type of which becomes one OTLP profile.
type Resource struct {
	Attributes map[string]string
	Profiles   []*profile.Profile
}

// FromPprof builds one ExportProfilesServiceRequest.
func FromPprof(resources ...Resource) pprofile.Profiles {
	pd := pprofile.NewProfiles()
	d := pd.Dictionary()
	strs := map[string]int32{}
	str := func(s string) int32 {
		if i, ok := strs[s]; ok {
			return i
		}
		i := int32(d.StringTable().Len())
		d.StringTable().Append(s)
		strs[s] = i
		return i
	}
	str("")                          // index 0 is the empty string
	d.MappingTable().AppendEmpty()   // and the tables' zero entries
	d.LocationTable().AppendEmpty()  //
	d.FunctionTable().AppendEmpty()  //
	d.StackTable().AppendEmpty()     //
	d.AttributeTable().AppendEmpty() //
	for _, r := range resources {
		rp := pd.ResourceProfiles().AppendEmpty()
		for k, v := range r.Attributes {
			rp.Resource().Attributes().PutStr(k, v)
		}
		sp := rp.ScopeProfiles().AppendEmpty()
		for _, p := range r.Profiles {
			funcs := map[uint64]int32{}
			locs := map[uint64]int32{}
			maps := map[uint64]int32{}
			for _, m := range p.Mapping {
				om := d.MappingTable().AppendEmpty()
				om.SetMemoryStart(m.Start)
				om.SetMemoryLimit(m.Limit)
				om.SetFileOffset(m.Offset)
				om.SetFilenameStrindex(str(m.File))
				maps[m.ID] = int32(d.MappingTable().Len() - 1)
			}
			for _, f := range p.Function {
				of := d.FunctionTable().AppendEmpty()
				of.SetNameStrindex(str(f.Name))
				of.SetSystemNameStrindex(str(f.SystemName))
				of.SetFilenameStrindex(str(f.Filename))
				of.SetStartLine(f.StartLine)
				funcs[f.ID] = int32(d.FunctionTable().Len() - 1)
			}
			for _, l := range p.Location {
				ol := d.LocationTable().AppendEmpty()
				ol.SetAddress(l.Address)
				if l.Mapping != nil {
					ol.SetMappingIndex(maps[l.Mapping.ID])
				}
				for _, ln := range l.Line {
					oln := ol.Lines().AppendEmpty()
					oln.SetFunctionIndex(funcs[ln.Function.ID])
					oln.SetLine(ln.Line)
				}
				locs[l.ID] = int32(d.LocationTable().Len() - 1)
			}
			for ti, st := range p.SampleType {
				op := sp.Profiles().AppendEmpty()
				op.SampleType().SetTypeStrindex(str(st.Type))
				op.SampleType().SetUnitStrindex(str(st.Unit))
				if p.PeriodType != nil {
					op.PeriodType().SetTypeStrindex(str(p.PeriodType.Type))
					op.PeriodType().SetUnitStrindex(str(p.PeriodType.Unit))
				}
				op.SetPeriod(p.Period)
				op.SetTime(pcommon.Timestamp(p.TimeNanos))
				op.SetDurationNano(uint64(p.DurationNanos))
				for _, s := range p.Sample {
					if s.Value[ti] == 0 {
						continue
					}
					stack := d.StackTable().AppendEmpty()
					for _, l := range s.Location {
						stack.LocationIndices().Append(locs[l.ID])
					}
					os := op.Samples().AppendEmpty()
					os.SetStackIndex(int32(d.StackTable().Len() - 1))
					os.Values().Append(s.Value[ti])
				}
			}
		}
	}
	return pd
}

// WriteJSONLines writes each request as one line of OTLP JSON: the file
// exporter's default format.
func WriteJSONLines(path string, reqs ...pprofile.Profiles) error {
	var out []byte
	m := pprofile.JSONMarshaler{}
	for _, r := range reqs {
		b, err := m.MarshalProfiles(r)
		if err != nil {
			return fmt.Errorf("otlp json: %w", err)
		}
		out = append(append(out, b...), '\n')
	}
	return os.WriteFile(path, out, 0o644)
}

// WriteProto writes each request as protobuf after its size (4 bytes, big
// endian): the file exporter's format: proto.
func WriteProto(path string, reqs ...pprofile.Profiles) error {
	var out []byte
	m := pprofile.ProtoMarshaler{}
	for _, r := range reqs {
		b, err := m.MarshalProfiles(r)
		if err != nil {
			return fmt.Errorf("otlp proto: %w", err)
		}
		out = binary.BigEndian.AppendUint32(out, uint32(len(b)))
		out = append(out, b...)
	}
	return os.WriteFile(path, out, 0o644)
}
