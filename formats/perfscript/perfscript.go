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
	// SourceLine, when set, names the source file and line of each frame
	// that perf printed without one (perf script without -F srcline): pid
	// is the sample's process (0 when perf did not print it), dso the
	// object perf named and addr the address it printed, for a user-space
	// object its offset in the file. ok false leaves the frame without.
	SourceLine func(pid int64, dso string, addr uint64) (file string, line int64, ok bool)
}

// ErrNoSamples means the input held no perf sample.
var ErrNoSamples = errors.New("no perf samples found")

// Parse reads `perf script` output and returns the profile of its on-CPU
// event (see IsCPUEvent), or of its first event when none is on-CPU. Use
// ParseEvents to keep every event of a multi-event recording.
func Parse(r io.Reader, opt Options) (*profile.Profile, error) {
	ps, err := ParseEvents(r, opt)
	if err != nil {
		return nil, err
	}
	for _, p := range ps {
		if IsCPUEvent(Event(p)) {
			return p, nil
		}
	}
	return ps[0], nil
}

// ParseEvents reads `perf script` output and returns one profile per event
// (perf record -e cycles -e instructions samples both into one file; their
// periods are different quantities and must not be summed), in the order
// the events first appear. Each has sample types samples/count and the
// event's period (for cpu-clock and task-clock, nanoseconds). Frames may be
// indented or not, as perl's stackcollapse-perf reads them. Malformed lines
// are an error naming the line; frames without a symbol are kept as
// "[unknown]" with their address.
func ParseEvents(r io.Reader, opt Options) ([]*profile.Profile, error) {
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
	if len(b.order) == 0 {
		return nil, ErrNoSamples
	}
	out := make([]*profile.Profile, 0, len(b.order))
	for _, ev := range b.order {
		out = append(out, ev.finish())
	}
	return out, nil
}

// EventComment prefixes the comment naming a converted profile's event.
const EventComment = "perf event "

// Event is the perf event a converted profile sampled ("cycles:u"), or "".
func Event(p *profile.Profile) string { return commentAfter(p, EventComment) }

// commentAfter is the rest of p's first comment that starts with prefix, or "".
func commentAfter(p *profile.Profile, prefix string) string {
	for _, c := range p.Comments {
		if rest, ok := strings.CutPrefix(c, prefix); ok {
			return rest
		}
	}
	return ""
}

// IsCPUEvent reports whether a perf event samples on-CPU time: the
// software clocks (cpu-clock, task-clock) and the cycle counter perf
// record uses by default, with any modifiers ("cycles:u", "cycles:ppp")
// or PMU prefix ("cpu_core/cycles/u").
func IsCPUEvent(event string) bool {
	switch baseEvent(event) {
	case "cpu-clock", "task-clock", "cycles", "cpu-cycles":
		return true
	}
	return false
}

// baseEvent strips an event's PMU prefix and modifiers:
// "cpu_core/cycles/u" and "cycles:ppp" are both "cycles".
func baseEvent(event string) string {
	name := event
	if pmu, rest, ok := strings.Cut(name, "/"); ok && pmu != "" {
		name, _, _ = strings.Cut(rest, "/")
	}
	name, _, _ = strings.Cut(name, ":")
	return name
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
	comm      string
	pid, tid  int64
	period    int64
	hasPeriod bool // perf printed the period (-F period, or its default fields)
	event     string
	time      time.Duration // 0 when perf did not print it
}

// builder reads lines; each event's samples go to their own eventProfile.
type builder struct {
	opt    Options
	cur    *header
	frames []frame
	jit    map[int64]*jitMap
	events map[string]*eventProfile
	order  []*eventProfile
}

// eventProfile is one event's profile under construction.
type eventProfile struct {
	event   string
	p       *profile.Profile
	funcs   map[[2]string]*profile.Function
	locs    map[locKey]*profile.Location
	maps    map[string]*profile.Mapping
	samples map[string]*profile.Sample
	first   time.Duration // first and last sample time, for the duration
	last    time.Duration
	haveT   bool
	// timed and periodic count the samples whose header carried a time
	// and a period.
	timed, periodic int64
}

type locKey struct {
	addr     uint64
	dso, sym string
	file     string
	line     int64
}

func newBuilder(opt Options) *builder {
	return &builder{opt: opt, jit: map[int64]*jitMap{}, events: map[string]*eventProfile{}}
}

// eventFor returns the profile of the named event, starting it if new.
func (b *builder) eventFor(name string) *eventProfile {
	if ev := b.events[name]; ev != nil {
		return ev
	}
	ev := &eventProfile{
		event:   name,
		p:       &profile.Profile{Comments: []string{Comment}},
		funcs:   map[[2]string]*profile.Function{},
		locs:    map[locKey]*profile.Location{},
		maps:    map[string]*profile.Mapping{},
		samples: map[string]*profile.Sample{},
	}
	if name != "" {
		ev.p.Comments = append(ev.p.Comments, EventComment+name)
	}
	b.events[name] = ev
	b.order = append(b.order, ev)
	return ev
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
	case b.cur != nil && isFrameLine(s):
		// Some tools and perf versions print frames flush left.
		return b.frameLine(s)
	}
	b.flush()
	h, err := parseHeader(s)
	if err != nil {
		return err
	}
	b.cur = &h
	return nil
}

// isFrameLine reports whether an unindented line is a stack frame, "addr
// sym+off (dso)", rather than a sample header: it starts with a hex
// address, ends with the object in parentheses and has no timestamp.
func isFrameLine(s string) bool {
	addr, rest, ok := strings.Cut(s, " ")
	if !ok || !isHex(addr) || !strings.HasSuffix(rest, ")") || !strings.Contains(rest, "(") {
		return false
	}
	for _, tok := range strings.Fields(rest) {
		if strings.HasSuffix(tok, ":") && isTime(tok[:len(tok)-1]) {
			return false
		}
	}
	return true
}

func isHex(s string) bool {
	if s == "" || len(s) > 16 {
		return false
	}
	_, err := strconv.ParseUint(s, 16, 64)
	return err == nil
}

// parseHeader reads "comm pid[/tid] [cpu] time: [period] event: ...". The
// command may contain spaces, so the pid is the first all-digit field after it.
func parseHeader(s string) (header, error) {
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
		return header{}, fmt.Errorf("sample header without a pid: %.80q", s)
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
			h.hasPeriod = true
		case strings.HasSuffix(tok, ":") && h.event == "":
			// The event keeps its modifiers ("cycles:u:" is cycles:u).
			h.event = strings.TrimSuffix(tok, ":")
		}
	}
	if h.period <= 0 {
		h.period = 1
	}
	h.time = t
	return h, nil
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

// flush turns the pending header and frames into a sample of its event,
// merging it with an identical earlier one so memory follows distinct
// stacks, not samples.
func (b *builder) flush() {
	h := b.cur
	b.cur = nil
	frames := b.frames
	b.frames = b.frames[:0]
	if h == nil {
		return
	}
	ev := b.eventFor(h.event)
	if h.hasPeriod {
		ev.periodic++
	}
	if h.time > 0 {
		ev.timed++
		if !ev.haveT || h.time < ev.first {
			ev.first = h.time
		}
		ev.last = max(ev.last, h.time)
		ev.haveT = true
	}
	locs := make([]*profile.Location, 0, len(frames))
	var key strings.Builder
	fmt.Fprintf(&key, "%s\x00%d\x00%d", h.comm, h.pid, h.tid)
	for _, fr := range frames {
		if fr.sym == "" {
			fr.sym = b.jitName(h.pid, fr)
		}
		if fr.srcFile == "" && fr.dso != "" && b.opt.SourceLine != nil {
			if file, line, ok := b.opt.SourceLine(h.pid, fr.dso, fr.addr); ok {
				fr.srcFile, fr.srcLine = file, line
			}
		}
		loc := ev.location(fr)
		locs = append(locs, loc)
		fmt.Fprintf(&key, "\x00%d", loc.ID)
	}
	if len(locs) == 0 {
		locs = append(locs, ev.location(frame{sym: "[no stack]"}))
	}
	k := key.String()
	if s := ev.samples[k]; s != nil {
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
	ev.samples[k] = s
	ev.p.Sample = append(ev.p.Sample, s)
}

func (ev *eventProfile) location(fr frame) *profile.Location {
	p := ev.p
	k := locKey{addr: fr.addr, dso: fr.dso, sym: fr.sym, file: fr.srcFile, line: fr.srcLine}
	if l := ev.locs[k]; l != nil {
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
	fn := ev.funcs[fk]
	if fn == nil {
		fn = &profile.Function{ID: uint64(len(p.Function) + 1), Name: sourceName(name), SystemName: name, Filename: fr.srcFile}
		ev.funcs[fk] = fn
		p.Function = append(p.Function, fn)
	}
	l := &profile.Location{ID: uint64(len(p.Location) + 1), Address: fr.addr,
		Line: []profile.Line{{Function: fn, Line: fr.srcLine}}}
	if fr.dso != "" {
		m := ev.maps[fr.dso]
		if m == nil {
			m = &profile.Mapping{ID: uint64(len(p.Mapping) + 1), File: fr.dso, HasFunctions: true}
			ev.maps[fr.dso] = m
			p.Mapping = append(p.Mapping, m)
		}
		l.Mapping = m
	}
	ev.locs[k] = l
	p.Location = append(p.Location, l)
	return l
}

// periodUnit is the unit of an event's period: time for the software
// clocks, cycles for the cycle counter, a count of events otherwise.
func periodUnit(event string) string {
	switch baseEvent(event) {
	case "cpu-clock", "task-clock":
		return "nanoseconds"
	case "cycles", "cpu-cycles":
		return "cycles"
	}
	return "count"
}

// NoTimeComment marks a profile whose samples perf script printed without
// a timestamp (-F without time, as FlameGraph's test inputs are): its
// duration is unknown, so nothing per second can be read from it.
const NoTimeComment = "perf script printed no timestamps: the recording's duration is unknown"

// NoPeriodComment marks a profile whose samples perf script printed without
// their period: the event's value is then a count of samples, one each,
// whatever the event measured between them.
const NoPeriodComment = "perf script printed no periods: each sample counts one"

func (ev *eventProfile) finish() *profile.Profile {
	p := ev.p
	event := ev.event
	if event == "" {
		event = "events"
	}
	unit := periodUnit(event)
	if ev.periodic == 0 {
		unit = "count"
		p.Comments = append(p.Comments, NoPeriodComment)
	}
	if ev.timed == 0 {
		p.Comments = append(p.Comments, NoTimeComment)
	}
	p.SampleType = []*profile.ValueType{{Type: "samples", Unit: "count"}, {Type: event, Unit: unit}}
	p.DefaultSampleType = "samples"
	p.PeriodType = &profile.ValueType{Type: event, Unit: unit}
	if ev.haveT {
		p.DurationNanos = int64(ev.last - ev.first)
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
	return m.name(fr.addr)
}

// name is the symbol whose range holds addr, or "".
func (m *jitMap) name(addr uint64) string {
	i := sort.Search(len(m.starts), func(i int) bool { return m.starts[i] > addr }) - 1
	if i >= 0 && addr < m.ends[i] {
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

// Looks reports whether data starts like `perf script` output, on positive
// evidence only: a sample header with a process id and an event ("comm
// pid/tid [cpu] 1.5: 1000 cycles:") followed by a stack frame ("addr
// sym+off (dso)", indented or not); or, for recordings without call chains,
// a header with a timestamp too followed by another such header. Headers
// without a timestamp (perf script -F comm,pid,event,ip,sym,dso) need the
// frame: "word 123 word:" alone is too common in other text.
func Looks(data []byte) bool {
	head := data[:min(len(data), 4096)]
	if bytes.IndexByte(head, 0) >= 0 {
		return false
	}
	lines := bytes.Split(head, []byte("\n"))
	for i := 0; i+1 < len(lines); i++ {
		l := string(bytes.TrimRight(lines[i], "\r"))
		if strings.TrimSpace(l) == "" || l[0] == '#' {
			continue
		}
		h, ok := sampleHeader(l)
		if !ok {
			return false
		}
		next := strings.TrimSpace(string(bytes.TrimRight(lines[i+1], "\r")))
		if isFrameLine(next) {
			return true
		}
		return h.time > 0 && isSampleHeader(next)
	}
	return false
}

// sampleHeader parses a line as a perf script sample header with a pid
// and an event, timestamp or not.
func sampleHeader(l string) (header, bool) {
	if l == "" || l[0] == ' ' || l[0] == '\t' || isFrameLine(l) {
		return header{}, false
	}
	h, err := parseHeader(l)
	return h, err == nil && h.event != ""
}

// isSampleHeader reports whether a line is a full perf script sample
// header: pid, timestamp and event all present.
func isSampleHeader(l string) bool {
	h, ok := sampleHeader(l)
	return ok && h.time > 0
}
