// Package folded reads folded (collapsed) stacks, the text format of
// FlameGraph's stackcollapse scripts and async-profiler's collapsed output:
// one stack per line, frames from the root to the leaf separated by ';', then
// a space and a count. async-profiler marks a frame's kind with a suffix
// (_[j] JIT-compiled Java, _[i] inlined, _[0] interpreted, _[1] C1-compiled,
// _[k] kernel); the suffix is stripped and the kind kept as the frame's
// mapping, so kernel, Java and native time stay apart.
//
// It reads what flamegraph.pl renders: an empty frame is kept (as an
// empty name), a ';' inside a JVM method signature ("read0(Ljava/io/
// FileDescriptor;JI)I") does not split the frame, and counts may be
// sample counts or time (async-profiler's --total writes nanoseconds);
// see Weights.
package folded

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
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

// Weights says what a folded file's counts are.
type Weights string

const (
	// WeightsAuto decides from the counts themselves; see Guess.
	WeightsAuto Weights = ""
	// WeightsSamples takes counts as numbers of samples (stackcollapse-perf,
	// async-profiler's default collapsed output).
	WeightsSamples Weights = "samples"
	// WeightsNanoseconds takes counts as time in nanoseconds
	// (async-profiler's collapsed --total for cpu and wall, period-weighted
	// exports).
	WeightsNanoseconds Weights = "nanoseconds"
)

// ParseWeights reads a --folded-weights value.
func ParseWeights(s string) (Weights, error) {
	switch w := Weights(s); w {
	case "auto":
		return WeightsAuto, nil
	case WeightsAuto, WeightsSamples, WeightsNanoseconds:
		return w, nil
	}
	return "", fmt.Errorf("folded weights %q: want auto, samples or nanoseconds", s)
}

// Options tune ParseWith.
type Options struct {
	Weights Weights
}

// Result is a parsed file with what was assumed reading it.
type Result struct {
	Profile *profile.Profile
	// Weights is what the counts were read as.
	Weights Weights
	// Assumed explains a guess about the counts' meaning; empty when the
	// caller said what they are or they are plainly sample counts.
	Assumed string
}

// Parse reads folded stacks from r, one line at a time, into a CPU-style
// profile with sample types samples/count and cpu/nanoseconds, counts taken
// as samples. Identical stacks are merged. Blank lines and lines starting
// with '#' are ignored.
func Parse(r io.Reader) (*profile.Profile, error) {
	res, err := ParseWith(r, Options{Weights: WeightsSamples})
	if err != nil {
		return nil, err
	}
	return res.Profile, nil
}

// ParseWith reads folded stacks as Parse does, with counts read as
// opt.Weights says: with WeightsAuto, counts that look like time (see
// Guess) are read as nanoseconds and the result says so.
func ParseWith(r io.Reader, opt Options) (*Result, error) {
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
	res := &Result{Profile: b.p, Weights: opt.Weights}
	if res.Weights == WeightsAuto {
		counts := make([]int64, len(b.p.Sample))
		for i, s := range b.p.Sample {
			counts[i] = s.Value[0]
		}
		res.Weights, res.Assumed = Guess(counts)
	}
	if res.Weights == WeightsNanoseconds {
		b.asTime()
	}
	return res, nil
}

// Guess decides whether counts (one per distinct stack) are samples or
// nanoseconds. Sample counts per stack are small and irregular; time weights are large, and
// async-profiler's --total makes every one a multiple of the sampling
// interval. Counts are taken as nanoseconds when every one is a multiple
// of at least 100µs, or when the median stack holds a million or more. The
// second result says what was assumed, for the user to check.
func Guess(counts []int64) (Weights, string) {
	var g int64
	nonzero := make([]int64, 0, len(counts))
	for _, c := range counts {
		if c > 0 {
			g = gcd(g, c)
			nonzero = append(nonzero, c)
		}
	}
	if len(nonzero) == 0 {
		return WeightsSamples, ""
	}
	slices.Sort(nonzero)
	median := nonzero[len(nonzero)/2]
	switch {
	case g >= 100_000 && len(nonzero) > 1:
		return WeightsNanoseconds, fmt.Sprintf("counts read as nanoseconds: every one is a multiple of %s, a sampling interval (async-profiler --total?); give --folded-weights=samples if they are sample counts", time.Duration(g))
	case median >= 1_000_000:
		return WeightsNanoseconds, fmt.Sprintf("counts read as nanoseconds: the median stack has %d, too many to be samples; give --folded-weights=samples if they are sample counts", median)
	}
	return WeightsSamples, ""
}

func gcd(a, b int64) int64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// asTime rereads the counts as nanoseconds: the time is the count, and the
// samples are estimated at one per Period (at least one per stack seen).
func (b *builder) asTime() {
	for _, s := range b.p.Sample {
		ns := s.Value[0]
		s.Value[1] = ns
		s.Value[0] = ns / int64(Period)
		if s.Value[0] == 0 && ns > 0 {
			s.Value[0] = 1
		}
	}
}

// Sniff reports whether the start of a file looks like folded stacks, on
// positive evidence: its first non-comment lines end in a space and a count,
// contain no characters that stacks never hold (NUL, '{' first), and at
// least half of them are stacks of several frames (a ';' outside a JVM
// signature). "name 123" lines alone (/proc/vmstat, /proc/stat's "btime")
// are not stacks.
func Sniff(head []byte) bool {
	if bytes.IndexByte(head, 0) >= 0 {
		return false
	}
	lines := bytes.Split(head, []byte("\n"))
	if len(lines) > 1 {
		lines = lines[:len(lines)-1] // the last may be cut off
	}
	seen, deep := 0, 0
	for _, l := range lines {
		l = bytes.TrimRight(l, "\r")
		if len(bytes.TrimSpace(l)) == 0 || l[0] == '#' {
			continue
		}
		stack, _, err := split(string(l))
		if err != nil || l[0] == '{' || l[0] == ' ' || l[0] == '\t' || strings.ContainsAny(stack, "\"\t") || strings.Contains(stack, "; ") {
			// Quotes, tabs and a frame starting with a space are what logs
			// hold and stack tools never write.
			return false
		}
		if frames := splitFrames(stack); len(frames) > 1 && slices.ContainsFunc(frames, func(f string) bool { return f != "" }) {
			deep++
		}
		if seen++; seen == 16 {
			break
		}
	}
	return seen > 0 && deep > 0 && deep*2 >= seen
}

// splitFrames cuts a stack at the ';' between frames, not at those inside
// a JVM method signature: in its parentheses or ending its return type.
func splitFrames(stack string) []string {
	if !strings.Contains(stack, "(") {
		return strings.Split(stack, ";")
	}
	var out []string
	depth, start := 0, 0
	for i := 0; i < len(stack); i++ {
		switch stack[i] {
		case '(':
			depth++
		case ')':
			depth = max(0, depth-1)
			// An object return type, ")Ljava/lang/Object;", ends in its own
			// ';' right after the class name (async-profiler 4's sig writes
			// '|' there instead, and then the next ';' is a separator).
			if j := i + 1 + len(stack[i+1:]) - len(strings.TrimLeft(stack[i+1:], "[")); depth == 0 && j < len(stack) && stack[j] == 'L' {
				if end := strings.IndexFunc(stack[j+1:], notClassName); end > 0 && stack[j+1+end] == ';' {
					i = j + 1 + end
				}
			}
		case ';':
			if depth == 0 {
				out = append(out, stack[start:i])
				start = i + 1
			}
		}
	}
	return append(out, stack[start:])
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
	locations map[string]*profile.Location // by kind and whole frame
	byText    map[string]*profile.Location // by the frame's text in the file
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
		byText:    map[string]*profile.Location{},
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
	names := splitFrames(stack)
	if len(names) > maxFrames {
		return fmt.Errorf("%d frames, more than %d", len(names), maxFrames)
	}
	s := &profile.Sample{Value: []int64{n, n * int64(Period)}}
	for i := len(names) - 1; i >= 0; i-- { // pprof orders leaf first
		// An empty frame stays, unnamed, as flamegraph.pl draws it.
		s.Location = append(s.Location, b.location(names[i]))
	}
	b.samples[stack] = s
	b.p.Sample = append(b.p.Sample, s)
	return nil
}

// Frame strips an async-profiler kind suffix from a frame and returns the
// name and its kind. Java frames are written with dots ("java.lang.String.equals")
// so that rules match one spelling whichever tool produced them; a JVM
// method signature ("(Ljava/io/FileDescriptor;JI)I", async-profiler -g) is
// left out of the name (SignatureFrame keeps it) and marks the frame Java.
func Frame(s string) (name, kind string) {
	name, kind, _ = SignatureFrame(s)
	return name, kind
}

// SignatureFrame is Frame that also returns the frame whole but for its
// kind suffix, signature included, for the function's system name.
func SignatureFrame(s string) (name, kind, whole string) {
	kind = KindNative
	if len(s) > 4 && strings.HasSuffix(s, "]") && s[len(s)-4:len(s)-2] == "_[" {
		switch s[len(s)-2] {
		case 'k':
			return s[:len(s)-4], KindKernel, s[:len(s)-4]
		case 'j', 'i', '0', '1':
			s, kind = s[:len(s)-4], KindJava
		}
	}
	whole = s
	if m, sig, ok := strings.Cut(s, "("); ok && isJVMSignature("("+sig) && m != "" {
		s, kind = m, KindJava
	}
	if kind == KindJava {
		s = strings.ReplaceAll(s, "/", ".")
	}
	return s, kind, whole
}

// notClassName reports whether r cannot be part of a JVM class name in a
// descriptor ("java/util/Map$Entry").
func notClassName(r rune) bool {
	return !(r == '/' || r == '$' || r == '_' || r == '.' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r > 0x7f)
}

// isJVMSignature reports whether s is a JVM method descriptor,
// "(params)return" in the class file's notation.
func isJVMSignature(s string) bool {
	params, ret, ok := strings.Cut(strings.TrimPrefix(s, "("), ")")
	return ok && strings.HasPrefix(s, "(") && isDescriptors(params) && (ret == "V" || isDescriptors(ret) && ret != "")
}

// isDescriptors reports whether s is a run of JVM field descriptors.
func isDescriptors(s string) bool {
	for s != "" {
		s = strings.TrimLeft(s, "[")
		switch {
		case s == "":
			return false
		case strings.ContainsRune("BCDFIJSZ", rune(s[0])):
			s = s[1:]
		case s[0] == 'L':
			// "Ljava/lang/String;", or "Ljava/lang/String|" as async-profiler
			// 4 writes it in collapsed stacks, where ';' separates frames.
			end := strings.IndexAny(s, ";|")
			if end < 2 {
				return false
			}
			s = s[end+1:]
		default:
			return false
		}
	}
	return true
}

func (b *builder) location(frame string) *profile.Location {
	if l := b.byText[frame]; l != nil {
		return l
	}
	name, kind, whole := SignatureFrame(frame)
	key := kind + "\x00" + whole
	if l := b.locations[key]; l != nil {
		b.byText[frame] = l
		return l
	}
	m := b.mappings[kind]
	if m == nil {
		m = &profile.Mapping{ID: uint64(len(b.p.Mapping) + 1), File: kind, HasFunctions: true}
		b.mappings[kind] = m
		b.p.Mapping = append(b.p.Mapping, m)
	}
	fn := &profile.Function{ID: uint64(len(b.p.Function) + 1), Name: name, SystemName: whole}
	b.p.Function = append(b.p.Function, fn)
	l := &profile.Location{ID: uint64(len(b.p.Location) + 1), Mapping: m, Line: []profile.Line{{Function: fn}}}
	b.p.Location = append(b.p.Location, l)
	b.locations[key] = l
	b.byText[frame] = l
	return l
}
