// Package perfscript converts the text output of `perf script` (Linux perf
// samples with call chains) into a google/pprof profile, streaming, so
// kernel and user stacks read like any other profile. Each sample keeps its
// command, process and thread as labels and its period as a value; frames
// perf could not name are named through the JIT's /tmp/perf-PID.map when
// one exists.
package perfscript

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/google/pprof/profile"
)

// Comment marks profiles made by this package, so loaders can tell a
// perf profile from a Go CPU profile.
const Comment = "converted from perf script by perfdoctor"

// KernelMapping is the mapping file of kernel frames.
const KernelMapping = "[kernel.kallsyms]"

// Options tune Parse. The zero value reads perf maps from /tmp.
type Options struct {
	// MapDir holds the perf-PID.map files of JIT compilers; "" means /tmp.
	// Set it to "-" to ignore them.
	MapDir string
	// MaxLine bounds one line of input; 0 means 1 MiB.
	MaxLine int
}

// ErrNoSamples means the input held no perf sample.
var ErrNoSamples = errors.New("no perf samples found")

// Parse reads `perf script` output and returns it as a profile with sample
// types samples/count and the event's period (for cpu-clock, nanoseconds).
// Malformed lines are an error naming the line; frames without a symbol are
// kept as "[unknown]" with their address.
func Parse(r io.Reader, opt Options) (*profile.Profile, error) {
	b := newBuilder(opt)
	br := bufio.NewReaderSize(r, 64<<10)
	maxLine := opt.MaxLine
	if maxLine <= 0 {
		maxLine = 1 << 20
	}
	lineNo := 0
	for {
		line, err := readLine(br, maxLine)
		if len(line) > 0 || err == nil {
			lineNo++
			if perr := b.line(line); perr != nil {
				return nil, fmt.Errorf("perf script line %d: %w", lineNo, perr)
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("perf script line %d: %w", lineNo+1, err)
		}
	}
	b.flush()
	if len(b.p.Sample) == 0 {
		return nil, ErrNoSamples
	}
	return b.finish(), nil
}

var errLineTooLong = errors.New("line too long")

// readLine returns one line without its newline, refusing lines over max.
func readLine(br *bufio.Reader, max int) ([]byte, error) {
	var buf []byte
	for {
		chunk, err := br.ReadSlice('\n')
		if len(buf)+len(chunk) > max {
			return nil, errLineTooLong
		}
		buf = append(buf, chunk...)
		if err == bufio.ErrBufferFull {
			continue
		}
		if err == nil {
			buf = bytes.TrimRight(buf, "\r\n")
		}
		return buf, err
	}
}

type frame struct {
	addr    uint64
	sym     string // "" when unknown
	dso     string
	srcFile string
	srcLine int64
}

type header struct {
	comm     string
	pid, tid int64
	period   int64
	event    string
}

type builder struct {
	opt     Options
	p       *profile.Profile
	cur     *header
	frames  []frame
	funcs   map[[2]string]*profile.Function
	locs    map[locKey]*profile.Location
	maps    map[string]*profile.Mapping
	samples map[string]*profile.Sample
	jit     map[int64]*jitMap
	event   string
	first   time.Duration // first and last sample time, for the duration
	last    time.Duration
	haveT   bool
}

type locKey struct {
	addr     uint64
	dso, sym string
	file     string
	line     int64
}

func newBuilder(opt Options) *builder {
	return &builder{
		opt:     opt,
		p:       &profile.Profile{Comments: []string{Comment}},
		funcs:   map[[2]string]*profile.Function{},
		locs:    map[locKey]*profile.Location{},
		maps:    map[string]*profile.Mapping{},
		samples: map[string]*profile.Sample{},
		jit:     map[int64]*jitMap{},
	}
}

func (b *builder) line(l []byte) error {
	s := string(l)
	switch {
	case strings.TrimSpace(s) == "":
		b.flush()
		return nil
	case strings.HasPrefix(s, "#"):
		return nil // perf script -header comments
	case s[0] == ' ' || s[0] == '\t':
		if b.cur == nil {
			return errors.New("stack frame before any sample header")
		}
		return b.frameLine(strings.TrimSpace(s))
	}
	b.flush()
	h, t, err := parseHeader(s)
	if err != nil {
		return err
	}
	if t > 0 {
		if !b.haveT || t < b.first {
			b.first = t
		}
		b.last = max(b.last, t)
		b.haveT = true
	}
	b.cur = &h
	return nil
}

// parseHeader reads "comm pid[/tid] [cpu] time: [period] event: ...". The
// command may contain spaces, so the pid is the first all-digit field after it.
func parseHeader(s string) (header, time.Duration, error) {
	f := strings.Fields(s)
	// "pid/tid" (perf script -F pid,tid) is unambiguous; a bare number may
	// also be a word of the command, so it is only the fallback.
	i := slices.IndexFunc(f[min(1, len(f)):], func(t string) bool { return strings.Contains(t, "/") && isPID(t) }) + 1
	if i == 0 {
		i = slices.IndexFunc(f[min(1, len(f)):], isDigits) + 1
	}
	if i == 0 {
		i = len(f)
	}
	if i >= len(f) {
		return header{}, 0, fmt.Errorf("sample header without a pid: %.80q", s)
	}
	h := header{comm: strings.Join(f[:i], " "), period: 1}
	pid, tid, ok := strings.Cut(f[i], "/")
	h.pid, _ = strconv.ParseInt(pid, 10, 64)
	if ok {
		h.tid, _ = strconv.ParseInt(tid, 10, 64)
	} else {
		// Without -F pid perf prints the thread id alone.
		h.tid, h.pid = h.pid, 0
	}
	var t time.Duration
	for _, tok := range f[i+1:] {
		switch {
		case strings.HasPrefix(tok, "[") && strings.HasSuffix(tok, "]"):
			// the CPU
		case strings.HasSuffix(tok, ":") && t == 0 && isTime(tok[:len(tok)-1]):
			sec, _ := strconv.ParseFloat(tok[:len(tok)-1], 64)
			t = time.Duration(sec * float64(time.Second))
		case isDigits(tok):
			h.period, _ = strconv.ParseInt(tok, 10, 64)
		case strings.HasSuffix(tok, ":") && h.event == "":
			h.event, _, _ = strings.Cut(tok, ":")
		}
	}
	if h.period <= 0 {
		h.period = 1
	}
	return h, t, nil
}

func isPID(s string) bool {
	a, b, ok := strings.Cut(s, "/")
	return isDigits(a) && (!ok || isDigits(b))
}

func isDigits(s string) bool {
	if s == "" || len(s) > 19 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

func isTime(s string) bool {
	a, b, ok := strings.Cut(s, ".")
	return ok && isDigits(a) && isDigits(b)
}

// frameLine reads "addr sym+off (dso)" or a source line "file.c:123"
// that perf prints under a frame with -F srcline.
func (b *builder) frameLine(s string) error {
	addrText, rest, _ := strings.Cut(s, " ")
	addr, err := strconv.ParseUint(addrText, 16, 64)
	if err != nil {
		if noSourceLine(s) && len(b.frames) > 0 {
			return nil
		}
		if file, line, ok := srcLine(s); ok && len(b.frames) > 0 {
			last := &b.frames[len(b.frames)-1]
			last.srcFile, last.srcLine = file, line
			return nil
		}
		return fmt.Errorf("stack frame without an address: %.80q", s)
	}
	fr := frame{addr: addr}
	rest = strings.TrimSpace(rest)
	if i := strings.LastIndex(rest, " ("); i >= 0 && strings.HasSuffix(rest, ")") {
		fr.dso = rest[i+2 : len(rest)-1]
		rest = rest[:i]
	} else if strings.HasPrefix(rest, "(") && strings.HasSuffix(rest, ")") {
		fr.dso, rest = rest[1:len(rest)-1], ""
	}
	fr.sym = trimOffset(strings.TrimSpace(rest))
	if fr.sym == "[unknown]" {
		fr.sym = ""
	}
	b.frames = append(b.frames, fr)
	return nil
}

// cloneSuffixes are what GCC appends to the functions it clones or splits
// (page_etag.constprop.0, finish_task_switch.isra.0, foo.part.1, foo.cold).
var cloneSuffixes = []string{".constprop.", ".isra.", ".part.", ".lto_priv.", ".cold"}

// sourceName is the function's name as its source spells it: compiler clone
// suffixes are dropped (SystemName keeps the symbol), so the hot function
// reads as the function a developer will look for.
func sourceName(sym string) string {
	for _, suffix := range cloneSuffixes {
		if i := strings.Index(sym, suffix); i > 0 {
			sym = sym[:i]
		}
	}
	return sym
}

// trimOffset drops perf's "+0x1f" symbol offset.
func trimOffset(sym string) string {
	if i := strings.LastIndex(sym, "+0x"); i > 0 {
		if _, err := strconv.ParseUint(sym[i+3:], 16, 64); err == nil {
			return sym[:i]
		}
	}
	return sym
}

// noSourceLine matches what -F srcline prints for a frame without debug
// information: the object and the address, "[kernel.kallsyms][ffffffff813ae293]"
// or "libc.so.6[2724a]", or "??:0".
func noSourceLine(s string) bool {
	if s == "??:0" || s == "??:?" {
		return true
	}
	open := strings.LastIndexByte(s, '[')
	if open <= 0 || !strings.HasSuffix(s, "]") || strings.ContainsAny(s, " \t") {
		return false
	}
	_, err := strconv.ParseUint(s[open+1:len(s)-1], 16, 64)
	return err == nil
}

func srcLine(s string) (string, int64, bool) {
	i := strings.LastIndexByte(s, ':')
	if i <= 0 || strings.ContainsAny(s, " \t") {
		return "", 0, false
	}
	n, err := strconv.ParseInt(s[i+1:], 10, 64)
	if err != nil || n < 0 {
		return "", 0, false
	}
	return s[:i], n, true
}

// flush turns the pending header and frames into a sample, merging it with
// an identical earlier one so memory follows distinct stacks, not samples.
func (b *builder) flush() {
	h := b.cur
	b.cur = nil
	frames := b.frames
	b.frames = b.frames[:0]
	if h == nil {
		return
	}
	if b.event == "" {
		b.event = h.event
	}
	locs := make([]*profile.Location, 0, len(frames))
	var key strings.Builder
	fmt.Fprintf(&key, "%s\x00%d\x00%d", h.comm, h.pid, h.tid)
	for _, fr := range frames {
		if fr.sym == "" {
			fr.sym = b.jitName(h.pid, fr)
		}
		loc := b.location(fr)
		locs = append(locs, loc)
		fmt.Fprintf(&key, "\x00%d", loc.ID)
	}
	if len(locs) == 0 {
		locs = append(locs, b.location(frame{sym: "[no stack]"}))
	}
	k := key.String()
	if s := b.samples[k]; s != nil {
		s.Value[0]++
		s.Value[1] += h.period
		return
	}
	s := &profile.Sample{
		Location: locs,
		Value:    []int64{1, h.period},
		Label:    map[string][]string{"comm": {h.comm}},
		NumLabel: map[string][]int64{"tid": {h.tid}},
	}
	if h.pid != 0 {
		s.NumLabel["pid"] = []int64{h.pid}
	}
	b.samples[k] = s
	b.p.Sample = append(b.p.Sample, s)
}

func (b *builder) location(fr frame) *profile.Location {
	k := locKey{addr: fr.addr, dso: fr.dso, sym: fr.sym, file: fr.srcFile, line: fr.srcLine}
	if l := b.locs[k]; l != nil {
		return l
	}
	name := fr.sym
	if name == "" {
		name = "[unknown]"
		if fr.dso != "" && fr.dso != "[unknown]" {
			name = "[unknown] " + filepath.Base(fr.dso)
		}
	}
	fk := [2]string{name, fr.srcFile}
	fn := b.funcs[fk]
	if fn == nil {
		fn = &profile.Function{ID: uint64(len(b.p.Function) + 1), Name: sourceName(name), SystemName: name, Filename: fr.srcFile}
		b.funcs[fk] = fn
		b.p.Function = append(b.p.Function, fn)
	}
	l := &profile.Location{ID: uint64(len(b.p.Location) + 1), Address: fr.addr,
		Line: []profile.Line{{Function: fn, Line: fr.srcLine}}}
	if fr.dso != "" {
		m := b.maps[fr.dso]
		if m == nil {
			m = &profile.Mapping{ID: uint64(len(b.p.Mapping) + 1), File: fr.dso, HasFunctions: true}
			b.maps[fr.dso] = m
			b.p.Mapping = append(b.p.Mapping, m)
		}
		l.Mapping = m
	}
	b.locs[k] = l
	b.p.Location = append(b.p.Location, l)
	return l
}

func (b *builder) finish() *profile.Profile {
	p := b.p
	event := b.event
	if event == "" {
		event = "events"
	}
	unit := "count"
	if event == "cpu-clock" || event == "task-clock" {
		unit = "nanoseconds"
	}
	p.SampleType = []*profile.ValueType{{Type: "samples", Unit: "count"}, {Type: event, Unit: unit}}
	p.DefaultSampleType = "samples"
	p.PeriodType = &profile.ValueType{Type: event, Unit: unit}
	if b.haveT {
		p.DurationNanos = int64(b.last - b.first)
	}
	return p
}

// jitMap is a perf-PID.map: "START SIZE name" lines, sorted by start.
type jitMap struct {
	starts []uint64
	ends   []uint64
	names  []string
}

func (b *builder) jitName(pid int64, fr frame) string {
	if b.opt.MapDir == "-" || pid <= 0 {
		return ""
	}
	m, seen := b.jit[pid]
	if !seen {
		dir := b.opt.MapDir
		if dir == "" {
			dir = "/tmp"
		}
		m, _ = readJITMap(filepath.Join(dir, fmt.Sprintf("perf-%d.map", pid)))
		b.jit[pid] = m // nil when absent: not read again
	}
	if m == nil {
		return ""
	}
	i := sort.Search(len(m.starts), func(i int) bool { return m.starts[i] > fr.addr }) - 1
	if i >= 0 && fr.addr < m.ends[i] {
		return m.names[i]
	}
	return ""
}

func readJITMap(path string) (*jitMap, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return parseJITMap(io.LimitReader(f, 256<<20))
}

func parseJITMap(r io.Reader) (*jitMap, error) {
	type entry struct {
		start, end uint64
		name       string
	}
	var es []entry
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		f := strings.SplitN(strings.TrimSpace(sc.Text()), " ", 3)
		if len(f) != 3 {
			continue
		}
		start, err1 := strconv.ParseUint(strings.TrimPrefix(f[0], "0x"), 16, 64)
		size, err2 := strconv.ParseUint(strings.TrimPrefix(f[1], "0x"), 16, 64)
		if err1 != nil || err2 != nil || start+size < start {
			continue
		}
		es = append(es, entry{start, start + size, f[2]})
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	sort.Slice(es, func(i, j int) bool { return es[i].start < es[j].start })
	m := &jitMap{}
	for _, e := range es {
		m.starts = append(m.starts, e.start)
		m.ends = append(m.ends, e.end)
		m.names = append(m.names, e.name)
	}
	return m, nil
}

// IsKernel reports whether a location is a kernel frame.
func IsKernel(l *profile.Location) bool {
	return l.Mapping != nil && (l.Mapping.File == KernelMapping || strings.HasPrefix(l.Mapping.File, "[kernel"))
}

// Looks reports whether data starts like `perf script` output: a sample
// header line followed by an indented hex address.
func Looks(data []byte) bool {
	head := data[:min(len(data), 4096)]
	lines := bytes.Split(head, []byte("\n"))
	for i := 0; i+1 < len(lines); i++ {
		l := lines[i]
		if len(l) == 0 || l[0] == '#' {
			continue
		}
		if l[0] == ' ' || l[0] == '\t' {
			return false
		}
		if _, _, err := parseHeader(string(l)); err != nil {
			return false
		}
		next := strings.TrimSpace(string(lines[i+1]))
		addr, _, _ := strings.Cut(next, " ")
		_, err := strconv.ParseUint(addr, 16, 64)
		return err == nil && addr != ""
	}
	return false
}
