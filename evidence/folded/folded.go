// Package folded reads folded (collapsed) stacks, the text format of
// FlameGraph's stackcollapse scripts and async-profiler's collapsed output:
// one stack per line, frames from the root to the leaf separated by ';', then
// a space and a count. async-profiler marks a frame's kind with a suffix
// (_[j] JIT-compiled Java, _[i] inlined, _[0] interpreted, _[1] C1-compiled,
// _[k] kernel); the suffix is stripped and the kind kept as the frame's
// mapping, so kernel, Java and native time stay apart.
package folded

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/google/pprof/profile"
)

// Frame kinds, recorded as the file of the frame's mapping.
const (
	KindJava   = "[java]"
	KindKernel = "[kernel.kallsyms]"
	KindNative = "[native]"
)

// Period is the sampling interval assumed for counts: async-profiler's and
// perf's usual 100 Hz. Folded files do not record it; shares do not depend on it.
const Period = 10 * time.Millisecond

const (
	maxLine   = 4 << 20 // one stack's text
	maxFrames = 4096
)

// Parse reads folded stacks from r, one line at a time, into a CPU-style
// profile with sample types samples/count and cpu/nanoseconds. Identical
// stacks are merged. Blank lines and lines starting with '#' are ignored.
func Parse(r io.Reader) (*profile.Profile, error) {
	b := newBuilder()
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxLine)
	lineNo := 0
	for sc.Scan() {
		lineNo++
		line := strings.TrimRight(sc.Text(), "\r")
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if err := b.add(line); err != nil {
			return nil, fmt.Errorf("folded stacks line %d: %w", lineNo, err)
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, fmt.Errorf("folded stacks line %d: longer than %d MiB", lineNo+1, maxLine>>20)
		}
		return nil, fmt.Errorf("folded stacks: %w", err)
	}
	if len(b.p.Sample) == 0 {
		return nil, errors.New("folded stacks: no samples")
	}
	return b.p, nil
}

// Sniff reports whether the start of a file looks like folded stacks: its
// first non-comment lines end in a space and a count and contain no
// characters that stacks never hold (NUL, '{').
func Sniff(head []byte) bool {
	if bytes.IndexByte(head, 0) >= 0 {
		return false
	}
	lines := bytes.Split(head, []byte("\n"))
	if len(lines) > 1 {
		lines = lines[:len(lines)-1] // the last may be cut off
	}
	seen := 0
	for _, l := range lines {
		l = bytes.TrimRight(l, "\r")
		if len(bytes.TrimSpace(l)) == 0 || l[0] == '#' {
			continue
		}
		if _, _, err := split(string(l)); err != nil || l[0] == '{' || l[0] == ' ' {
			return false
		}
		if seen++; seen == 8 {
			break
		}
	}
	return seen > 0
}

// split cuts a line into its stack text and count.
func split(line string) (string, int64, error) {
	i := strings.LastIndexByte(line, ' ')
	if i <= 0 {
		return "", 0, errors.New(`want "frame;frame;... count"`)
	}
	n, err := strconv.ParseInt(line[i+1:], 10, 64)
	if err != nil || n < 0 {
		return "", 0, fmt.Errorf("count %q is not a non-negative integer", line[i+1:])
	}
	stack := strings.TrimRight(line[:i], " ")
	if stack == "" {
		return "", 0, errors.New("empty stack")
	}
	return stack, n, nil
}

type builder struct {
	p         *profile.Profile
	mappings  map[string]*profile.Mapping
	locations map[string]*profile.Location // by kind and name
	samples   map[string]*profile.Sample   // by the stack's text
}

func newBuilder() *builder {
	return &builder{
		p: &profile.Profile{
			SampleType: []*profile.ValueType{{Type: "samples", Unit: "count"}, {Type: "cpu", Unit: "nanoseconds"}},
			PeriodType: &profile.ValueType{Type: "cpu", Unit: "nanoseconds"},
			Period:     int64(Period),
		},
		mappings:  map[string]*profile.Mapping{},
		locations: map[string]*profile.Location{},
		samples:   map[string]*profile.Sample{},
	}
}

func (b *builder) add(line string) error {
	stack, n, err := split(line)
	if err != nil {
		return err
	}
	if s := b.samples[stack]; s != nil {
		s.Value[0] += n
		s.Value[1] += n * int64(Period)
		return nil
	}
	names := strings.Split(stack, ";")
	if len(names) > maxFrames {
		return fmt.Errorf("%d frames, more than %d", len(names), maxFrames)
	}
	s := &profile.Sample{Value: []int64{n, n * int64(Period)}}
	for i := len(names) - 1; i >= 0; i-- { // pprof orders leaf first
		name, kind := Frame(names[i])
		if name == "" {
			return fmt.Errorf("empty frame %d", i+1)
		}
		s.Location = append(s.Location, b.location(name, kind))
	}
	b.samples[stack] = s
	b.p.Sample = append(b.p.Sample, s)
	return nil
}

// Frame strips an async-profiler kind suffix from a frame and returns the
// name and its kind. Java frames are written with dots ("java.lang.String.equals")
// so that rules match one spelling whichever tool produced them.
func Frame(s string) (name, kind string) {
	if len(s) > 4 && strings.HasSuffix(s, "]") && s[len(s)-4:len(s)-2] == "_[" {
		switch s[len(s)-2] {
		case 'k':
			return s[:len(s)-4], KindKernel
		case 'j', 'i', '0', '1':
			return strings.ReplaceAll(s[:len(s)-4], "/", "."), KindJava
		}
	}
	return s, KindNative
}

func (b *builder) location(name, kind string) *profile.Location {
	key := kind + "\x00" + name
	if l := b.locations[key]; l != nil {
		return l
	}
	m := b.mappings[kind]
	if m == nil {
		m = &profile.Mapping{ID: uint64(len(b.p.Mapping) + 1), File: kind, HasFunctions: true}
		b.mappings[kind] = m
		b.p.Mapping = append(b.p.Mapping, m)
	}
	fn := &profile.Function{ID: uint64(len(b.p.Function) + 1), Name: name, SystemName: name}
	b.p.Function = append(b.p.Function, fn)
	l := &profile.Location{ID: uint64(len(b.p.Location) + 1), Mapping: m, Line: []profile.Line{{Function: fn}}}
	b.p.Location = append(b.p.Location, l)
	b.locations[key] = l
	return l
}
