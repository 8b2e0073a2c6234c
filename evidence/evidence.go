// Package evidence loads what a collection produced (a bundle, a plain
// directory of profiles, or loose files) into one in-memory view that rules
// read. It knows nothing of rules or of how the files were fetched.
package evidence

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/google/pprof/profile"
	"github.com/perfdoctor/perfdoctor/bundle"
	"github.com/perfdoctor/perfdoctor/evidence/trace"
	"github.com/perfdoctor/perfdoctor/formats/folded"
	"github.com/perfdoctor/perfdoctor/formats/gctrace"
	"github.com/perfdoctor/perfdoctor/formats/goroutines"
	"github.com/perfdoctor/perfdoctor/formats/jfr"
	"github.com/perfdoctor/perfdoctor/formats/perfscript"
)

// Kind names a profile's role in the evidence.
type Kind string

const (
	CPU       Kind = "cpu"
	Heap      Kind = "heap"       // in-use heap at the end of the window
	HeapStart Kind = "heap-start" // in-use heap at the start of the window
	Allocs    Kind = "allocs"
	Goroutine Kind = "goroutine" // at the end of the window
	// GoroutineStart is the goroutine profile at the start of the window.
	GoroutineStart Kind = "goroutine-start"
	// GoroutineLeak is the runtime's goroutineleak profile: goroutines its
	// leak-detecting GC cycle proved blocked forever (Go >= 1.27).
	GoroutineLeak Kind = "goroutineleak"
	Mutex         Kind = "mutex"
	Block         Kind = "block"
	// Perf is a whole-stack profile from Linux perf (kernel frames included),
	// converted from `perf script` output.
	Perf Kind = "perf"
	// OffCPU is a process's off-CPU time by stack and state, from perf's
	// sched:sched_switch events (perfscript.ParseOffCPU).
	OffCPU Kind = "offcpu"
)

// maxFileBytes bounds what one input file may occupy in memory.
const maxFileBytes = 512 << 20

// Evidence is everything known about one target over one window.
type Evidence struct {
	Sources  []string         // the paths it was loaded from
	Manifest *bundle.Manifest // nil for plain directories and loose files
	Profiles map[Kind]*profile.Profile
	// MetricsStart and MetricsEnd are runtime statistics at both ends of the
	// window; either may be nil. A single sample is stored as MetricsEnd.
	MetricsStart, MetricsEnd *bundle.RuntimeStats
	SystemStart, SystemEnd   *bundle.SystemSnapshot
	TracePath                string
	// Load is the load that ran during the window (load.json: perfdoctor
	// run, demo); nil without one.
	Load *bundle.LoadResult
	// ConfigFiles are a known server's configuration files as its command
	// line names them (config.json: collect --perf, run --perf, sys), nil
	// without them (another program, or a bundle recorded before them).
	ConfigFiles *bundle.ConfigFiles
	Files       []File // every file considered, with what it was taken as

	// TraceSummary is the execution trace summarised (Load reads it);
	// nil without one, or when it could not be read (Trace says why).
	TraceSummary *trace.Summary

	// GCTrace is the collector's own log (GODEBUG=gctrace=1) summarised,
	// when one was given (AddGCTrace); nil otherwise.
	GCTrace *gctrace.Summary
	// HeapSeries is every heap profile, oldest first, when more than two
	// were loaded (collect --heap-every); the first and last are also
	// Profiles[HeapStart] and Profiles[Heap].
	HeapSeries []*profile.Profile
	// JVM is what a JFR recording says about the JVM (configuration,
	// collector, exceptions, threads); nil for other targets.
	JVM *jfr.Summary
	// GoroutineStacks is a goroutine dump (goroutine?debug=2) taken at the
	// end of the window: wait times and creating sites; nil if none.
	GoroutineStacks *goroutines.Dump
	// PerfEvents is every event of perf script input by name ("cycles:u",
	// "page-faults"), each its own profile; Profiles[Perf] is one of them.
	PerfEvents map[string]*profile.Profile

	// traceErr is why the trace at TracePath could not be read; nil when
	// it was, or when there is none.
	traceErr error
}

// File records how one input file was used.
type File struct {
	Path   string `json:"path"`
	Kind   string `json:"kind,omitempty"`   // what it was recognised as
	Reason string `json:"reason,omitempty"` // why it was skipped
	// Partial says why a file that was used was read only in part (a
	// truncated trace or gzip stream); empty when read whole.
	Partial string `json:"partial,omitempty"`
	// Note is an assumption made reading it (folded weights taken as
	// nanoseconds, say), for the user to check.
	Note string `json:"note,omitempty"`
}

// Skipped lists the files that were not understood or not used.
func (e *Evidence) Skipped() []File {
	var out []File
	for _, f := range e.Files {
		if f.Reason != "" {
			out = append(out, f)
		}
	}
	return out
}

// Profile returns the profile of the given kind, or nil.
func (e *Evidence) Profile(k Kind) *profile.Profile { return e.Profiles[k] }

// ErrSeveralProfiles is PickProfile's answer when no kind was named and
// the evidence holds several profiles but no CPU profile.
var ErrSeveralProfiles = errors.New("the input holds several profiles")

// PickProfile returns the profile of the named kind or, with no kind, the
// CPU profile, else the only profile there is.
func (e *Evidence) PickProfile(kind string) (*profile.Profile, error) {
	var kinds []string
	for k := range e.Profiles {
		kinds = append(kinds, string(k))
	}
	slices.Sort(kinds)
	switch {
	case kind != "":
		if p := e.Profile(Kind(kind)); p != nil {
			return p, nil
		}
		return nil, fmt.Errorf("no %s profile in the input (it has: %s)", kind, strings.Join(kinds, ", "))
	case e.Profile(CPU) != nil:
		return e.Profile(CPU), nil
	case len(kinds) == 1:
		return e.Profile(Kind(kinds[0])), nil
	case len(kinds) == 0:
		return nil, errors.New("the input holds no profile")
	}
	return nil, fmt.Errorf("%w (%s): choose one", ErrSeveralProfiles, strings.Join(kinds, ", "))
}

// Heaps returns the heap profiles over the window, oldest first: the series
// when collect took one (--heap-every), else the start and end heaps that exist.
func (e *Evidence) Heaps() []*profile.Profile {
	if len(e.HeapSeries) > 0 {
		return e.HeapSeries
	}
	var out []*profile.Profile
	for _, k := range []Kind{HeapStart, Heap} {
		if p := e.Profiles[k]; p != nil {
			out = append(out, p)
		}
	}
	return out
}

// WindowAllocs computes the allocations made during the window (readers
// take facts.WindowAllocs, computed once per diagnosis), and whether
// they are limited to it. The allocs profile counts from process start, so a
// service that built a large cache at startup would name its loader as the
// top allocation site; subtracting the start heap profile's alloc counts
// (heap and allocs profiles carry the same four sample types) leaves what
// was allocated between the GCs that bracket the window. Without a start
// heap, or when the two profiles do not merge, it returns the cumulative
// profile and false.
func (e *Evidence) WindowAllocs() (*profile.Profile, bool) {
	end, start := e.Profiles[Allocs], e.Profiles[HeapStart]
	if end == nil {
		end = e.Profiles[Heap]
	}
	if end == nil || start == nil || start.TimeNanos >= end.TimeNanos {
		return end, false
	}
	base := start.Copy()
	base.Scale(-1)
	delta, err := profile.Merge([]*profile.Profile{end.Copy(), base})
	if err != nil {
		return end, false
	}
	// Stacks whose counts cancel out are dropped; a sample can also go
	// negative when the start heap was sampled after a GC the end one
	// predates, which only happens with no GC inside the window.
	i := sampleIndex(delta, "alloc_objects")
	if i < 0 {
		return end, false
	}
	kept := delta.Sample[:0]
	var objects int64
	for _, s := range delta.Sample {
		if s.Value[i] > 0 {
			kept = append(kept, s)
			objects += s.Value[i]
		}
	}
	if objects == 0 {
		return end, false
	}
	delta.Sample = kept
	return delta, true
}

// ErrNoTrace is returned by Trace when the evidence holds no execution trace.
var ErrNoTrace = errors.New("no execution trace")

// Trace returns the execution trace's summary, ErrNoTrace when the
// evidence holds none, or why the trace file could not be read (the file's
// skip reason too). A trace cut short gives the summary of what was read,
// and its file is marked partial. Load reads the trace; nothing is read here.
func (e *Evidence) Trace() (*trace.Summary, error) {
	switch {
	case e.TraceSummary != nil:
		return e.TraceSummary, nil
	case e.traceErr != nil:
		return nil, e.traceErr
	}
	return nil, ErrNoTrace
}

// Window is the observation window: the CPU profile's duration, else the
// manifest's, else the span between the two metrics samples.
func (e *Evidence) Window() time.Duration {
	if p := e.Profiles[CPU]; p != nil && p.DurationNanos > 0 {
		return time.Duration(p.DurationNanos)
	}
	if e.Manifest != nil && e.Manifest.Duration > 0 {
		return time.Duration(e.Manifest.Duration)
	}
	if e.MetricsStart != nil && e.MetricsEnd != nil {
		return e.MetricsEnd.Time.Sub(e.MetricsStart.Time)
	}
	return 0
}

// ErrNoEvidence is returned when the inputs hold nothing perfdoctor can read.
var ErrNoEvidence = errors.New("no profiles or statistics found")

// LoadOptions say what the files cannot: how to read their numbers, and
// inputs that come from elsewhere than a path.
type LoadOptions struct {
	// FoldedWeights is what folded stacks' counts are; the zero value
	// guesses from the counts and notes the guess on the file.
	FoldedWeights folded.Weights
	// GCTrace, when set, is a GODEBUG=gctrace=1 log (a program's stderr,
	// gzipped or not) read as evidence too, named GCTraceName ("-" for
	// stdin) in messages; with no paths it is the only evidence.
	GCTrace     io.Reader
	GCTraceName string
	// PerfEvent names the event of perf script input to read as the perf
	// profile ("cycles:u"); "" picks the on-CPU one, else the most sampled.
	PerfEvent string
}

// loader builds one Evidence: it files what each input holds, then places
// heaps and statistics in time and reads the trace. Evidence has no
// method that changes it; only the loader (and Builder) write it.
type loader struct {
	*Evidence
	opt     LoadOptions
	heaps   []*profile.Profile
	metrics []*bundle.RuntimeStats
}

// Load reads every path (bundle directories, plain directories, files) and
// the options' gctrace log into one Evidence, the execution trace included:
// nothing downstream reads a file. A file named explicitly that cannot be
// read is an error; a file found in a directory that is not understood is
// skipped and listed. ctx stops a long load between files.
func Load(ctx context.Context, opt LoadOptions, paths ...string) (*Evidence, error) {
	if len(paths) == 0 && opt.GCTrace == nil {
		return nil, errors.New("no input: give a bundle directory, profile files or a gctrace log")
	}
	l := &loader{Evidence: &Evidence{Sources: paths, Profiles: map[Kind]*profile.Profile{}}, opt: opt}
	for _, path := range paths {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		st, err := os.Stat(path)
		if err != nil {
			return nil, fmt.Errorf("input %s: %w", path, errors.Unwrap(err))
		}
		if !st.IsDir() {
			if err := l.addFile(path, &l.heaps, &l.metrics); err != nil {
				return nil, err
			}
			continue
		}
		if err := l.addDir(path, &l.heaps, &l.metrics); err != nil {
			return nil, err
		}
	}
	if opt.GCTrace != nil {
		if err := l.readGCTrace(opt.GCTrace, opt.GCTraceName); err != nil {
			return nil, err
		}
	}
	l.placeHeaps(l.heaps)
	l.placeMetrics(l.metrics)
	if err := l.checkPerfEvent(); err != nil {
		return nil, err
	}
	l.perfAsCPU()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	l.readTrace()
	e := l.Evidence
	if len(e.Profiles) == 0 && e.MetricsEnd == nil && e.SystemEnd == nil && e.TracePath == "" && e.JVM == nil && e.GCTrace == nil {
		return nil, fmt.Errorf("%s: %w", strings.Join(paths, ", "), ErrNoEvidence)
	}
	return e, nil
}

// readTrace summarises the execution trace found, marking its file
// partial when it was cut short, or skipped with the reason it could not
// be read, so "no findings" is never the only word about it.
func (e *loader) readTrace() {
	if e.TracePath == "" {
		return
	}
	e.TraceSummary, e.traceErr = trace.SummarizeFile(e.TracePath)
	for i := range e.Files {
		f := &e.Files[i]
		switch {
		case f.Path != e.TracePath:
		case e.traceErr != nil:
			f.Reason = e.traceErr.Error()
		case e.TraceSummary.Partial != "":
			f.Partial = "execution trace " + e.TraceSummary.Partial
		}
	}
}

// readGCTrace reads a GODEBUG=gctrace=1 log, streaming, and keeps its
// summary as GCTrace.
func (e *loader) readGCTrace(r io.Reader, source string) error {
	if source == "" {
		source = "gctrace"
	}
	r, err := gunzipped(r)
	if err != nil {
		return fmt.Errorf("gctrace %s: %w", source, err)
	}
	s, err := gctrace.Summarize(io.LimitReader(r, 4<<30))
	if err != nil {
		return fmt.Errorf("gctrace %s: %w", source, err)
	}
	e.GCTrace = s
	e.Sources = append(e.Sources, source)
	e.Files = append(e.Files, File{Path: source, Kind: "gctrace"})
	return nil
}

func (e *loader) addDir(dir string, heaps *[]*profile.Profile, metrics *[]*bundle.RuntimeStats) error {
	m, err := bundle.ReadManifest(dir)
	switch {
	case err == nil:
		e.Manifest = m
	case errors.Is(err, os.ErrNotExist):
	default:
		return fmt.Errorf("bundle %s: %w", dir, err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("input %s: %w", dir, err)
	}
	if len(entries) == 0 {
		return fmt.Errorf("%s is an empty directory: %w", dir, ErrNoEvidence)
	}
	for _, ent := range entries {
		name := ent.Name()
		path := filepath.Join(dir, name)
		if !ent.Type().IsRegular() || name == bundle.ManifestFile || strings.HasPrefix(name, ".") {
			continue
		}
		f, err := e.read(path, heaps, metrics)
		if err != nil {
			e.Files = append(e.Files, File{Path: path, Reason: err.Error()})
			continue
		}
		e.Files = append(e.Files, f)
	}
	return nil
}

func (e *loader) addFile(path string, heaps *[]*profile.Profile, metrics *[]*bundle.RuntimeStats) error {
	f, err := e.read(path, heaps, metrics)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	e.Files = append(e.Files, f)
	return nil
}

// read recognises a file by its content, not its name (gzipped or not),
// and files it.
func (e *loader) read(path string, heaps *[]*profile.Profile, metrics *[]*bundle.RuntimeStats) (File, error) {
	if isJFRFile(path) {
		f := File{Path: path}
		var err error
		f.Kind, err = e.readJFR(path, &f)
		return f, err
	}
	data, partial, err := readInput(path)
	if err != nil {
		return File{}, err
	}
	f := File{Path: path, Partial: partial}
	f.Kind, err = e.readData(path, data, &f, heaps, metrics)
	if err != nil && partial != "" {
		err = fmt.Errorf("%w (%s)", err, partial)
	}
	return f, err
}

// readData files the decompressed content of path; it may add a note or
// a partial reason to f.
func (e *loader) readData(path string, data []byte, f *File, heaps *[]*profile.Profile, metrics *[]*bundle.RuntimeStats) (string, error) {
	switch sniff(data) {
	case formatEmpty:
		return "", errors.New("empty file")
	case formatTrace:
		// Read once every file is filed (readTrace), which marks it partial if cut.
		f.Partial = ""
		e.TracePath = path
		return "trace", nil
	case formatMemStatsText:
		st, err := bundle.ParseMemStats(bytes.NewReader(data))
		if err != nil {
			return "", fmt.Errorf("heap debug=1 text: %w", err)
		}
		if fi, err := os.Stat(path); err == nil {
			st.Time = fi.ModTime()
		}
		*metrics = append(*metrics, &st)
		return "memstats", nil
	case formatJSON:
		return e.readJSON(path, data, metrics)
	case formatGoroutineDump:
		d, err := goroutines.Parse(bytes.NewReader(data))
		if err != nil {
			return "", err
		}
		e.GoroutineStacks = d
		return "goroutine-stacks", nil
	case formatPerfScript:
		return e.readPerfScript(data, f)
	case formatFolded:
		return e.readFolded(data, f)
	case formatProfile, formatLegacyProfile:
		p, err := profile.ParseData(data)
		if err != nil {
			return "", fmt.Errorf("not a valid profile: %w", err)
		}
		nameSampleTypes(p)
		legacyNote := nameLegacyTypes(p, data)
		kind, err := classify(p, path)
		if err != nil {
			return "", err
		}
		if len(p.Function) == 0 && len(p.Sample) > 0 {
			f.Note = "addresses only, no function names (a legacy profile): name them with `pprof -proto BINARY " + filepath.Base(path) + " > named.pb.gz` on the machine that ran it"
		}
		if kind == ThreadCreate {
			legacyNote = threadCreateNote(p)
		}
		f.Note = joinNotes(legacyNote, f.Note)
		if kind == Heap {
			*heaps = append(*heaps, p)
			return string(kind), nil
		}
		return e.addProfile(kind, p)
	}
	return "", unknownReason(data)
}

// readPerfScript keeps every event of a perf script file: the on-CPU one
// (or, without one, the most sampled) is the perf profile rules read; all
// are in PerfEvents by name.
func (e *loader) readPerfScript(data []byte, f *File) (string, error) {
	// JIT maps in this machine's /tmp need not be the recording's.
	ps, err := perfscript.ParseEvents(bytes.NewReader(data), perfscript.Options{MapDir: "-"})
	if err != nil {
		return "", err
	}
	if e.PerfEvents == nil {
		e.PerfEvents = map[string]*profile.Profile{}
	}
	main, err := pickPerfEvent(ps, e.opt.PerfEvent)
	if err != nil {
		return "", err
	}
	var names []string
	for _, p := range ps {
		ev := perfscript.Event(p)
		names = append(names, ev)
		if prev := e.PerfEvents[ev]; prev != nil {
			merged, err := profile.Merge([]*profile.Profile{prev, p})
			if err != nil {
				return "", fmt.Errorf("cannot merge with the other %s profile: %w", ev, err)
			}
			p = merged
		}
		e.PerfEvents[ev] = p
		if e.opt.PerfEvent == "" && rank(p) > rank(main) {
			main = p
		}
	}
	if _, err := e.addProfile(Perf, main); err != nil {
		return "", err
	}
	f.Note = perfNote(main)
	kind := "perf " + perfscript.Event(main)
	if len(ps) > 1 {
		kind += " (events kept apart: " + strings.Join(names, ", ") + ")"
	}
	return kind, nil
}

// rank orders perf events for the perf profile: an on-CPU event first,
// then the most sampled.
func rank(p *profile.Profile) int {
	n := len(p.Sample)
	if perfscript.IsCPUEvent(perfscript.Event(p)) {
		n += 1 << 40
	}
	return n
}

// perfAsCPU makes perf's stacks the CPU profile when there is no other: a
// native service has no pprof endpoint, and perf's cpu-clock, task-clock and
// cycles events are on-CPU time, so the CPU rules (the hot function first)
// read it as they read a Go CPU profile. The event's sample type is named
// "cpu" in that copy and keeps its unit (nanoseconds, or cycles, which
// rules use for shares only). Other events (instructions, page faults) are
// not CPU time and stay in PerfEvents.
func (e *loader) perfAsCPU() {
	p := e.Profiles[Perf]
	if p == nil || e.Profiles[CPU] != nil {
		return
	}
	cpu := p.Copy()
	for _, st := range cpu.SampleType {
		if perfscript.IsCPUEvent(st.Type) {
			st.Type = "cpu"
			e.Profiles[CPU] = cpu
			return
		}
	}
}

// addProfile files p as kind, merging it with one already loaded. Two
// goroutine profiles are the two ends of the window instead: counts at
// instants do not add up.
func (e *loader) addProfile(kind Kind, p *profile.Profile) (string, error) {
	if prev := e.Profiles[Goroutine]; kind == Goroutine && prev != nil {
		if p.TimeNanos < prev.TimeNanos {
			e.Profiles[GoroutineStart] = p
			return string(GoroutineStart), nil
		}
		e.Profiles[GoroutineStart], e.Profiles[Goroutine] = prev, p
		return string(kind), nil
	}
	if prev := e.Profiles[kind]; prev != nil {
		merged, err := profile.Merge([]*profile.Profile{prev, p})
		if err != nil {
			return "", fmt.Errorf("cannot merge with the other %s profile: %w", kind, err)
		}
		p = merged
	}
	e.Profiles[kind] = p
	return string(kind), nil
}

func classify(p *profile.Profile, path string) (Kind, error) {
	has := func(t string) bool {
		for _, st := range p.SampleType {
			if st.Type == t {
				return true
			}
		}
		return false
	}
	switch {
	case slices.Contains(p.Comments, perfscript.Comment):
		return Perf, nil
	case slices.Contains(p.Comments, perfscript.OffCPUComment):
		return OffCPU, nil
	case has("cpu"):
		return CPU, nil
	case has("alloc_objects") || has("inuse_space"):
		if p.DefaultSampleType == "alloc_space" || p.DefaultSampleType == "alloc_objects" {
			return Allocs, nil
		}
		return Heap, nil
	case has("goroutine"):
		return Goroutine, nil
	case has("goroutineleak"):
		return GoroutineLeak, nil
	case has("exceptions"):
		return Exceptions, nil
	case has("contentions") && isJFRMonitor(p):
		return Mutex, nil
	case has("contentions") && has("delay"):
		return mutexOrBlock(p, path), nil
	}
	if kind, ok := legacyKind(p); ok {
		return kind, nil
	}
	var types []string
	for _, st := range p.SampleType {
		types = append(types, st.Type)
	}
	return "", fmt.Errorf("profile of sample types [%s] is not used", strings.Join(types, " "))
}

// mutexOrBlock tells the two apart: they share sample types, but mutex
// profiles record stacks ending in the Unlock that released a contended lock.
func mutexOrBlock(p *profile.Profile, path string) Kind {
	unlock := FuncPrefix("sync.(*Mutex).Unlock", "sync.(*RWMutex).Unlock", "sync.(*RWMutex).RUnlock", "runtime.unlock")
	st := NewStacks(p, "contentions")
	if st != nil && len(st.Samples) > 0 {
		for _, s := range st.Samples {
			if len(s.Frames) > 0 && unlock(st.Frames[s.Frames[0]].Func) {
				return Mutex
			}
		}
		return Block
	}
	if strings.Contains(strings.ToLower(filepath.Base(path)), "mutex") {
		return Mutex
	}
	return Block
}

func (e *loader) readJSON(path string, data []byte, metrics *[]*bundle.RuntimeStats) (string, error) {
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(data, &keys); err != nil {
		if bytes.Contains(data, []byte("}\n{")) {
			return "", fmt.Errorf("%w: JSON lines (one object a line), as logs and go test -json write", errUnknown)
		}
		return "", fmt.Errorf("invalid JSON: %w", err)
	}
	switch {
	case keys["num_gc"] != nil && keys["source"] != nil:
		var st bundle.RuntimeStats
		if err := json.Unmarshal(data, &st); err != nil {
			return "", fmt.Errorf("runtime statistics: %w", err)
		}
		*metrics = append(*metrics, &st)
		return "metrics", nil
	case keys["machine"] != nil:
		var snap bundle.SystemSnapshot
		if err := json.Unmarshal(data, &snap); err != nil {
			return "", fmt.Errorf("system snapshot: %w", err)
		}
		switch {
		case e.SystemEnd == nil:
			e.SystemEnd = &snap
		case snap.Time.Before(e.SystemEnd.Time):
			e.SystemStart = &snap
		default:
			e.SystemStart, e.SystemEnd = e.SystemEnd, &snap
		}
		return "system", nil
	case isJVMSummary(keys):
		return e.readJVMSummary(data)
	case keys["config_files"] != nil && keys["program"] != nil:
		var c bundle.ConfigFiles
		if err := json.Unmarshal(data, &c); err != nil {
			return "", fmt.Errorf("configuration files: %w", err)
		}
		e.ConfigFiles = &c
		return "config-files", nil
	case keys["throughput_rps"] != nil && keys["latency"] != nil:
		var l bundle.LoadResult
		if err := json.Unmarshal(data, &l); err != nil {
			return "", fmt.Errorf("load results: %w", err)
		}
		e.Load = &l
		return "load", nil
	}
	names := slices.Sorted(maps.Keys(keys))
	return "", fmt.Errorf("%w: JSON of another tool (keys: %s)", errUnknown, strings.Join(names[:min(len(names), 5)], ", "))
}

// placeHeaps orders heap profiles by time: the latest is the end-of-window
// heap, the earliest (if more than one) the start.
func (e *loader) placeHeaps(heaps []*profile.Profile) {
	if len(heaps) == 0 {
		return
	}
	sort.SliceStable(heaps, func(i, j int) bool { return heaps[i].TimeNanos < heaps[j].TimeNanos })
	e.Profiles[Heap] = heaps[len(heaps)-1]
	if len(heaps) > 1 {
		e.Profiles[HeapStart] = heaps[0]
	}
	if len(heaps) > 2 {
		e.HeapSeries = heaps
	}
}

func (e *loader) placeMetrics(ms []*bundle.RuntimeStats) {
	if len(ms) == 0 {
		return
	}
	sort.SliceStable(ms, func(i, j int) bool { return ms[i].Time.Before(ms[j].Time) })
	e.MetricsEnd = ms[len(ms)-1]
	if len(ms) > 1 {
		e.MetricsStart = ms[0]
	}
}
