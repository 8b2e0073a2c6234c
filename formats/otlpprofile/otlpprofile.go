// Package otlpprofile reads OpenTelemetry profiles (the OTLP profiles
// signal, v1development) as the OpenTelemetry Collector's file exporter
// writes them, and turns each profile into a pprof profile with the
// resource attributes that say whose it is.
//
// The file exporter writes one ExportProfilesServiceRequest per line as
// OTLP JSON (format: json), or each one after its size as a 4-byte
// big-endian integer (format: proto, or json with the legacy per-message
// compression); with compression: zstd each message, or with native
// compression the whole file, is a zstd stream. All of these are read.
// Messages are decoded by the Collector's own pdata (pprofile), the code
// that wrote them: the official Go protobuf module of OTLP
// (go.opentelemetry.io/proto/otlp) carries no profiles in any version the
// module proxy serves.
package otlpprofile

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/google/pprof/profile"
	"github.com/klauspost/compress/zstd"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pprofile"
)

// Profile is one OTLP profile as pprof, with its resource's attributes.
type Profile struct {
	// Resource holds the resource's attributes, as strings
	// (service.name, service.instance.id, host.name...).
	Resource map[string]string
	Start    time.Time
	Duration time.Duration
	// Kind is what the profile measures, as perfdoctor names it: cpu,
	// allocs, mutex, block; empty for kinds perfdoctor does not read.
	Kind string
	// Pprof carries the profile's one sample type; a CPU profile counted in
	// samples also gets cpu/nanoseconds (samples x period).
	Pprof *profile.Profile
}

// maxMessage bounds one message of a file.
const maxMessage = 256 << 20

var zstdMagic = []byte{0x28, 0xb5, 0x2f, 0xfd}

// Read reads a file exporter's file whole.
func Read(r io.Reader) ([]Profile, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	head, _ := br.Peek(4)
	if bytes.Equal(head, zstdMagic) { // native compression: the whole stream
		dec, err := zstd.NewReader(br, zstd.WithDecoderMaxMemory(maxMessage))
		if err != nil {
			return nil, fmt.Errorf("otlp profiles: %w", err)
		}
		defer dec.Close()
		br = bufio.NewReaderSize(dec, 64<<10)
		head, _ = br.Peek(4)
	}
	var out []Profile
	n := 0
	add := func(msg []byte) error {
		n++
		ps, err := Decode(msg)
		if err != nil {
			return fmt.Errorf("otlp profiles: message %d: %w", n, err)
		}
		out = append(out, ps...)
		return nil
	}
	if len(head) > 0 && (head[0] == '{' || head[0] == ' ' || head[0] == '\n') { // JSON lines
		for {
			line, err := br.ReadSlice('\n')
			if errors.Is(err, bufio.ErrBufferFull) {
				line, err = readLongLine(br, line)
			}
			if len(bytes.TrimSpace(line)) > 0 {
				if e := add(bytes.TrimSpace(line)); e != nil {
					return nil, e
				}
			}
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return nil, fmt.Errorf("otlp profiles: %w", err)
			}
		}
		return out, nil
	}
	for { // length-prefixed messages
		var size [4]byte
		if _, err := io.ReadFull(br, size[:]); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return nil, fmt.Errorf("otlp profiles: message %d: truncated size", n+1)
		}
		length := binary.BigEndian.Uint32(size[:])
		if length > maxMessage {
			return nil, fmt.Errorf("otlp profiles: message %d claims %d bytes: not a file exporter's file, or corrupt", n+1, length)
		}
		// Read what is there rather than allocate what the size claims: a
		// corrupt size must not cost its bytes in memory.
		var buf bytes.Buffer
		if got, _ := io.CopyN(&buf, br, int64(length)); got != int64(length) {
			return nil, fmt.Errorf("otlp profiles: message %d: truncated (%d bytes announced, %d there)", n+1, length, got)
		}
		msg := buf.Bytes()
		if bytes.HasPrefix(msg, zstdMagic) { // per-message compression
			dec, err := zstd.NewReader(nil, zstd.WithDecoderMaxMemory(maxMessage))
			if err != nil {
				return nil, fmt.Errorf("otlp profiles: %w", err)
			}
			msg, err = dec.DecodeAll(msg, nil)
			dec.Close()
			if err != nil {
				return nil, fmt.Errorf("otlp profiles: message %d: zstd: %w", n+1, err)
			}
		}
		if err := add(msg); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func readLongLine(br *bufio.Reader, first []byte) ([]byte, error) {
	buf := append([]byte(nil), first...)
	for {
		more, err := br.ReadSlice('\n')
		buf = append(buf, more...)
		if len(buf) > maxMessage {
			return nil, fmt.Errorf("a line longer than %d MiB", maxMessage>>20)
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			return buf, err
		}
	}
}

// Decode reads one ExportProfilesServiceRequest, OTLP JSON or protobuf.
func Decode(msg []byte) ([]Profile, error) {
	var pd pprofile.Profiles
	var err error
	if t := bytes.TrimSpace(msg); len(t) > 0 && t[0] == '{' {
		u := pprofile.JSONUnmarshaler{}
		pd, err = u.UnmarshalProfiles(t)
	} else {
		u := pprofile.ProtoUnmarshaler{}
		pd, err = u.UnmarshalProfiles(msg)
	}
	if err != nil {
		return nil, fmt.Errorf("not OTLP profiles: %s", firstLine(err.Error()))
	}
	return convert(pd)
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	if len(s) > 200 {
		s = s[:200] + "..."
	}
	return s
}

// convert turns every profile of the request into pprof.
func convert(pd pprofile.Profiles) ([]Profile, error) {
	d := pd.Dictionary()
	c := &converter{dict: d, strs: d.StringTable()}
	var out []Profile
	rps := pd.ResourceProfiles()
	for i := 0; i < rps.Len(); i++ {
		rp := rps.At(i)
		res := map[string]string{}
		rp.Resource().Attributes().Range(func(k string, v pcommon.Value) bool {
			res[k] = v.AsString()
			return true
		})
		sps := rp.ScopeProfiles()
		for j := 0; j < sps.Len(); j++ {
			ps := sps.At(j).Profiles()
			for k := 0; k < ps.Len(); k++ {
				p, err := c.profile(ps.At(k))
				if err != nil {
					return nil, fmt.Errorf("resource %d, scope %d, profile %d: %w", i, j, k, err)
				}
				if p == nil {
					continue
				}
				out = append(out, Profile{Resource: res, Start: time.Unix(0, p.TimeNanos), Duration: time.Duration(p.DurationNanos),
					Kind: kindOf(p), Pprof: p})
			}
		}
	}
	return out, nil
}

type converter struct {
	dict pprofile.ProfilesDictionary
	strs pcommon.StringSlice
}

func (c *converter) str(i int32) (string, error) {
	if i < 0 || int(i) >= c.strs.Len() {
		return "", fmt.Errorf("string index %d out of the table's %d", i, c.strs.Len())
	}
	return c.strs.At(int(i)), nil
}

// profile converts one OTLP profile; nil when it has no samples.
func (c *converter) profile(op pprofile.Profile) (*profile.Profile, error) {
	typ, err := c.valueType(op.SampleType())
	if err != nil {
		return nil, err
	}
	ptyp, err := c.valueType(op.PeriodType())
	if err != nil {
		return nil, err
	}
	p := &profile.Profile{SampleType: []*profile.ValueType{typ}, TimeNanos: int64(op.Time()), DurationNanos: int64(op.DurationNano()),
		Period: op.Period()}
	if ptyp.Type != "" {
		p.PeriodType = ptyp
	}
	// A CPU profile counted in samples (the eBPF profiler's) also gets
	// CPU time, which the rules and the fleet's cores read.
	cpuFromSamples := (typ.Type == "samples" || typ.Type == "sample") && ptyp.Type == "cpu" && ptyp.Unit == "nanoseconds" && op.Period() > 0
	if cpuFromSamples {
		p.SampleType = append(p.SampleType, &profile.ValueType{Type: "cpu", Unit: "nanoseconds"})
	}
	locs := map[int32]*profile.Location{}
	funcs := map[int32]*profile.Function{}
	maps := map[int32]*profile.Mapping{}
	stacks := c.dict.StackTable()
	locTable := c.dict.LocationTable()
	samples := op.Samples()
	for i := 0; i < samples.Len(); i++ {
		s := samples.At(i)
		var v int64
		if vs := s.Values(); vs.Len() > 0 {
			for j := 0; j < vs.Len(); j++ {
				v += vs.At(j)
			}
		} else {
			v = int64(max(1, s.TimestampsUnixNano().Len())) // each timestamp is one sample
		}
		si := s.StackIndex()
		if si < 0 || int(si) >= stacks.Len() {
			return nil, fmt.Errorf("sample %d: stack index %d out of the table's %d", i, si, stacks.Len())
		}
		smp := &profile.Sample{Value: []int64{v}}
		if cpuFromSamples {
			smp.Value = append(smp.Value, v*op.Period())
		}
		li := stacks.At(int(si)).LocationIndices()
		for j := 0; j < li.Len(); j++ {
			idx := li.At(j)
			loc, ok := locs[idx]
			if !ok {
				if idx < 0 || int(idx) >= locTable.Len() {
					return nil, fmt.Errorf("sample %d: location index %d out of the table's %d", i, idx, locTable.Len())
				}
				if loc, err = c.location(locTable.At(int(idx)), funcs, maps); err != nil {
					return nil, err
				}
				loc.ID = uint64(len(p.Location) + 1)
				p.Location = append(p.Location, loc)
				locs[idx] = loc
			}
			smp.Location = append(smp.Location, loc)
		}
		p.Sample = append(p.Sample, smp)
	}
	if len(p.Sample) == 0 {
		return nil, nil
	}
	for _, f := range funcs {
		p.Function = append(p.Function, f)
	}
	for _, m := range maps {
		p.Mapping = append(p.Mapping, m)
	}
	sortByID(p)
	if err := p.CheckValid(); err != nil {
		return nil, err
	}
	return p, nil
}

func (c *converter) valueType(vt pprofile.ValueType) (*profile.ValueType, error) {
	t, err := c.str(vt.TypeStrindex())
	if err != nil {
		return nil, err
	}
	u, err := c.str(vt.UnitStrindex())
	if err != nil {
		return nil, err
	}
	return &profile.ValueType{Type: t, Unit: u}, nil
}

func (c *converter) location(ol pprofile.Location, funcs map[int32]*profile.Function, maps map[int32]*profile.Mapping) (*profile.Location, error) {
	loc := &profile.Location{Address: ol.Address()}
	if mi := ol.MappingIndex(); mi > 0 { // index 0 is the table's empty entry
		m, ok := maps[mi]
		if !ok {
			mt := c.dict.MappingTable()
			if int(mi) >= mt.Len() {
				return nil, fmt.Errorf("mapping index %d out of the table's %d", mi, mt.Len())
			}
			om := mt.At(int(mi))
			file, err := c.str(om.FilenameStrindex())
			if err != nil {
				return nil, err
			}
			m = &profile.Mapping{ID: uint64(len(maps) + 1), Start: om.MemoryStart(), Limit: om.MemoryLimit(), Offset: om.FileOffset(), File: file,
				HasFunctions: true}
			maps[mi] = m
		}
		loc.Mapping = m
	}
	lines := ol.Lines()
	ft := c.dict.FunctionTable()
	for k := 0; k < lines.Len(); k++ {
		ln := lines.At(k)
		fi := ln.FunctionIndex()
		f, ok := funcs[fi]
		if !ok {
			if fi < 0 || int(fi) >= ft.Len() {
				return nil, fmt.Errorf("function index %d out of the table's %d", fi, ft.Len())
			}
			of := ft.At(int(fi))
			name, err := c.str(of.NameStrindex())
			if err != nil {
				return nil, err
			}
			sys, err := c.str(of.SystemNameStrindex())
			if err != nil {
				return nil, err
			}
			file, err := c.str(of.FilenameStrindex())
			if err != nil {
				return nil, err
			}
			f = &profile.Function{ID: uint64(len(funcs) + 1), Name: name, SystemName: sys, Filename: file, StartLine: of.StartLine()}
			funcs[fi] = f
		}
		loc.Line = append(loc.Line, profile.Line{Function: f, Line: ln.Line(), Column: ln.Column()})
	}
	return loc, nil
}

// sortByID orders functions and mappings by ID, as pprof writes them.
func sortByID(p *profile.Profile) {
	fs := make([]*profile.Function, len(p.Function))
	for _, f := range p.Function {
		fs[f.ID-1] = f
	}
	p.Function = fs
	ms := make([]*profile.Mapping, len(p.Mapping))
	for _, m := range p.Mapping {
		ms[m.ID-1] = m
	}
	p.Mapping = ms
}

// kindOf names what a profile measures by its sample type, as Go's
// runtime and the OpenTelemetry profilers name them.
func kindOf(p *profile.Profile) string {
	switch t := p.SampleType[0].Type; {
	case t == "cpu" || (len(p.SampleType) > 1 && p.SampleType[1].Type == "cpu"):
		return "cpu"
	case t == "alloc_space" || t == "alloc_objects":
		return "allocs"
	case t == "contentions" || t == "delay":
		// Go's mutex and block profiles share their types; a mutex
		// profile's stacks end in the Unlock that released the lock.
		for _, s := range p.Sample {
			if len(s.Location) > 0 && len(s.Location[0].Line) > 0 && strings.Contains(s.Location[0].Line[0].Function.Name, "Unlock") {
				return "mutex"
			}
		}
		return "block"
	}
	return ""
}
