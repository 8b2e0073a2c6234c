// Package bundle defines the on-disk unit of evidence: a plain directory of
// profiles, runtime statistics and system snapshots with a manifest that says
// what was collected and what failed. Collectors write bundles; the evidence
// package reads them. Both sides share the names and types defined here.
package bundle

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/perfdoctor/perfdoctor/internal/output"
)

// FormatVersion is bumped when a bundle's layout changes incompatibly.
const FormatVersion = 1

// File names inside a bundle. Profiles keep the names `go tool pprof` users expect.
const (
	ManifestFile     = "manifest.json"
	CPUFile          = "cpu.pb.gz"
	HeapFile         = "heap.pb.gz"   // at the end of the window
	HeapStartFile    = "heap-0.pb.gz" // at the start of the window
	AllocsFile       = "allocs.pb.gz"
	GoroutineFile    = "goroutine.pb.gz"
	MutexFile        = "mutex.pb.gz"
	BlockFile        = "block.pb.gz"
	TraceFile        = "trace.out"
	MetricsStartFile = "metrics-0.json"
	MetricsEndFile   = "metrics-1.json"
	SystemStartFile  = "system-0.json"
	SystemEndFile    = "system-1.json"
	LoadFile         = "load.json"
	// PerfFile holds stacks with kernel frames from Linux perf (collect
	// --perf), converted from `perf script` to a pprof profile.
	PerfFile = "perf.pb.gz"
	// OffCPUFile holds a local process's off-CPU time by stack from perf's
	// sched:sched_switch events (collect --perf, where permitted).
	OffCPUFile     = "offcpu.pb.gz"
	ExceptionsFile = "exceptions.pb.gz" // JVM: where exceptions were thrown
	JVMFile        = "jvm.json"         // JVM: the JFR recording's summary
	// Goroutines at the start of the window, the runtime's own leak
	// profile (Go >= 1.27, or 1.26 with GOEXPERIMENT=goroutineleakprofile)
	// and every goroutine's stack with its wait time and creating site
	// (goroutine?debug=2) at the end.
	GoroutineStartFile = "goroutine-0.pb.gz"
	GoroutineLeakFile  = "goroutineleak.pb.gz"
	GoroutineStackFile = "goroutines.txt"
)

// Item status values in the manifest.
const (
	StatusOK      = "ok"
	StatusFailed  = "failed"
	StatusSkipped = "skipped"
)

// Manifest describes a bundle: where it came from, when, and the fate of each item.
type Manifest struct {
	FormatVersion int       `json:"format_version"`
	Tool          string    `json:"tool"`
	Target        string    `json:"target"` // credentials redacted
	Start         time.Time `json:"start"`
	End           time.Time `json:"end"`
	// Duration is the requested observation window (the CPU profile's length).
	Duration Duration `json:"duration"`
	// Partial is true when at least one item failed: the bundle is usable but incomplete.
	Partial bool         `json:"partial"`
	Items   []Item       `json:"items"`
	Runtime RuntimeInfo  `json:"runtime"`
	PID     int          `json:"pid,omitempty"` // local targets only
	Load    *LoadSummary `json:"load,omitempty"`
	// Trace says what window the execution trace covers when it is not
	// the end of the collection window: the agent's flight recorder holds
	// the seconds before a trigger. Nil for a trace taken during the window.
	Trace *TraceWindow `json:"trace,omitempty"`
	// Samplers are the CPU samplers that ran while a JVM was recorded
	// (collect --jfr, --jvm), so a reader knows what its CPU samples are.
	Samplers []Sampler `json:"samplers,omitempty"`
}

// Sampler is one CPU sampler that ran during a JVM's recording.
type Sampler struct {
	// Name is the event or the profiler: "jdk.CPUTimeSample" (JEP 509,
	// JDK 25 and later: a sample for each interval of CPU time a thread
	// uses, in the VM and native code too), "jdk.ExecutionSample" (JFR's
	// sampler: Java frames of the threads found running, every interval),
	// "async-profiler 4.6".
	Name     string   `json:"name"`
	Interval Duration `json:"interval"`
	// Samples counts the samples in the recording (0 when not counted).
	Samples int64 `json:"samples,omitempty"`
}

// TraceWindow is where an execution trace's window lies in time.
type TraceWindow struct {
	Source string    `json:"source"` // "flight recorder"
	End    time.Time `json:"end"`    // the trace ends here: the trigger
	// MinAge is the recorder's setting: the trace reaches back at least
	// this far, when the process ran that long.
	MinAge Duration `json:"min_age"`
}

// Item is one thing collection tried to produce.
type Item struct {
	Name     string   `json:"name"` // e.g. "cpu", "heap-start", "system-end"
	File     string   `json:"file,omitempty"`
	Status   string   `json:"status"`
	Error    string   `json:"error,omitempty"`
	Bytes    int64    `json:"bytes,omitempty"`
	Duration Duration `json:"duration"`
	// Attempts counts the requests made when a busy server (503, 429) was
	// asked again; 0 when the first answered.
	Attempts int `json:"attempts,omitempty"`
	// Note says how the data differs from what was asked for: a profile
	// covering less than the window after retries, or made of two
	// snapshots because the server ignored seconds.
	Note string `json:"note,omitempty"`
}

// AddNote adds note to what the item's Note says, after a semicolon; an
// empty note adds nothing.
func (it *Item) AddNote(note string) {
	switch {
	case note == "":
	case it.Note == "":
		it.Note = note
	default:
		it.Note += "; " + note
	}
}

// RuntimeInfo is what is known of the target's Go runtime settings, each with
// where it was learned, since a remote target shows less than a local one.
type RuntimeInfo struct {
	GoVersion  string `json:"go_version,omitempty"`
	GOMAXPROCS int    `json:"gomaxprocs,omitempty"`
	GOGC       string `json:"gogc,omitempty"`
	GOMEMLIMIT string `json:"gomemlimit,omitempty"`
	Source     string `json:"source,omitempty"`
}

// LoadSummary records the load that ran while the bundle was collected.
type LoadSummary struct {
	URL         string   `json:"url"`
	Concurrency int      `json:"concurrency,omitempty"`
	Rate        float64  `json:"rate,omitempty"`
	Duration    Duration `json:"duration"`
	// Command is a --load-cmd load's command (credentials redacted) and
	// Unit what its units of work are.
	Command string `json:"command,omitempty"`
	Unit    string `json:"unit,omitempty"`
}

// OK reports whether the named item was collected.
func (m *Manifest) OK(name string) bool {
	for _, it := range m.Items {
		if it.Name == name {
			return it.Status == StatusOK
		}
	}
	return false
}

// Failed lists the items that failed.
func (m *Manifest) Failed() []Item {
	var out []Item
	for _, it := range m.Items {
		if it.Status == StatusFailed {
			out = append(out, it)
		}
	}
	return out
}

// Summary is what a person is told when the bundle in dir has been
// written: how many items were collected, the failed ones with their
// reasons, and "partial" when the bundle is.
func (m *Manifest) Summary(dir string) string {
	ok := 0
	for _, it := range m.Items {
		if it.Status == StatusOK {
			ok++
		}
	}
	state := "bundle"
	if m.Partial {
		state = "partial bundle"
	}
	s := fmt.Sprintf("%s written to %s: %d of %d items collected\n", state, dir, ok, len(m.Items))
	for _, it := range m.Items {
		switch {
		case it.Status == StatusFailed:
			s += fmt.Sprintf("  %s failed: %s\n", it.Name, it.Error)
		case it.Status == StatusOK && it.Note != "":
			s += fmt.Sprintf("  %s: %s\n", it.Name, it.Note)
		}
	}
	return s
}

// Duration is a time.Duration that reads and writes as a Go duration string
// ("30s") in JSON, so manifests stay readable.
type Duration time.Duration

func (d Duration) MarshalJSON() ([]byte, error) {
	return json.Marshal(time.Duration(d).String())
}

func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("duration: %w", err)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("duration: %w", err)
	}
	*d = Duration(v)
	return nil
}

// ReadManifest reads dir/manifest.json. It returns an error wrapping
// os.ErrNotExist when the directory has no manifest (a plain directory).
func ReadManifest(dir string) (*Manifest, error) {
	b, err := os.ReadFile(filepath.Join(dir, ManifestFile))
	if err != nil {
		return nil, err
	}
	var m Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, ManifestFile), err)
	}
	return &m, nil
}

// WriteFileAtomic writes data to path through a temporary name in the same
// directory and renames it into place, so a reader never sees half a file.
// Bundle files are private (0600): snapshots hold command lines.
func WriteFileAtomic(path string, data []byte) error {
	return output.WriteFile(path, output.Private, data)
}

// WriteJSONAtomic marshals v with indentation and writes it atomically.
func WriteJSONAtomic(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding %s: %w", filepath.Base(path), err)
	}
	return WriteFileAtomic(path, append(b, '\n'))
}

// AddLoad saves the load that ran during the collection into a finished
// bundle: result as load.json, then the manifest with a "load" item and the
// summary, written last so a reader sees either the old manifest or the
// complete new one.
func AddLoad(dir string, result *LoadResult, summary LoadSummary) error {
	m, err := ReadManifest(dir)
	if err != nil {
		return err
	}
	path := filepath.Join(dir, LoadFile)
	if err := WriteJSONAtomic(path, result); err != nil {
		return err
	}
	st, err := os.Stat(path)
	if err != nil {
		return err
	}
	item := Item{Name: "load", File: LoadFile, Status: StatusOK, Bytes: st.Size(), Duration: summary.Duration}
	replaced := false
	for i := range m.Items {
		if m.Items[i].Name == item.Name {
			m.Items[i], replaced = item, true
		}
	}
	if !replaced {
		m.Items = append(m.Items, item)
	}
	m.Load = &summary
	return WriteJSONAtomic(filepath.Join(dir, ManifestFile), m)
}
