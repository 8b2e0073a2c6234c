package agent

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/perfdoctor/perfdoctor/bundle"
)

// capturePrefix starts every capture directory's name; rotation only ever
// removes directories named so.
const capturePrefix = "capture-"

// CaptureRecord describes one capture on disk.
type CaptureRecord struct {
	Dir     string    `json:"dir"`
	Time    time.Time `json:"time"`
	Trigger *Trigger  `json:"trigger,omitempty"`
	Bytes   int64     `json:"bytes"`
	Partial bool      `json:"partial,omitempty"`
	Error   string    `json:"error,omitempty"`
}

// captureManifest is bundle.Manifest with the trigger that caused the
// capture; bundle readers ignore the extra field.
type captureManifest struct {
	bundle.Manifest
	Trigger *Trigger `json:"trigger,omitempty"`
}

// captureSpec is what one capture needs from the agent.
type captureSpec struct {
	dir        string
	cpu        time.Duration
	trigger    *Trigger
	limits     *Limits
	maxBytes   int64
	maxCount   int
	cpuSeconds func() (user, sys float64, maxRSS uint64)
	rss        func() uint64
	flight     *flightRecorder // nil: no trace
}

// capture writes a perfdoctor bundle into a temporary directory under
// spec.dir and renames it into place, then rotates old captures out. A
// cancelled ctx cuts the CPU profile short; the rest is still written.
func capture(ctx context.Context, spec captureSpec) (CaptureRecord, error) {
	start := time.Now()
	rec := CaptureRecord{Time: start, Trigger: spec.trigger}
	w, err := bundle.NewWriter(spec.dir, ".tmp-capture-")
	if err != nil {
		return rec, err
	}
	defer w.Abort() // no-op after the rename
	m := captureManifest{
		Manifest: bundle.Manifest{
			Tool:     "perfdoctor agent",
			Target:   fmt.Sprintf("self (pid %d)", os.Getpid()),
			Start:    start,
			Duration: bundle.Duration(spec.cpu),
			PID:      os.Getpid(),
		},
		Trigger: spec.trigger,
	}
	add := func(name, file string, t0 time.Time, err error) { w.Written(name, file, time.Since(t0), err) }
	writeProfile := func(name, file string) {
		t0 := time.Now()
		add(name, file, t0, writeTo(w.Path(file), func(f *os.File) error {
			p := pprof.Lookup(strings.TrimSuffix(name, "-start"))
			if p == nil {
				return fmt.Errorf("no %s profile", name)
			}
			return p.WriteTo(f, 0)
		}))
	}
	stats := func() *bundle.RuntimeStats {
		_, _, maxRSS := spec.cpuSeconds()
		return memStats(maxRSS)
	}

	// The flight recorder's window first: it ends at the trigger, before
	// the capture's own profiling changes what the process does.
	if spec.flight != nil {
		t0 := time.Now()
		err := spec.flight.snapshot(w.Path(bundle.TraceFile))
		add("trace", bundle.TraceFile, t0, err)
		if err == nil {
			m.Trace = &bundle.TraceWindow{Source: "flight recorder", End: t0, MinAge: bundle.Duration(spec.flight.age)}
		}
	}
	t0 := time.Now()
	w.AddJSON("metrics-start", bundle.MetricsStartFile, stats(), time.Since(t0))
	writeProfile("heap-start", bundle.HeapStartFile)
	writeProfile("goroutine-start", bundle.GoroutineStartFile)

	// Contended locks are only recorded while mutex profiling is on; turn
	// it on for the window when the program has not, and restore it after.
	if runtime.SetMutexProfileFraction(-1) == 0 {
		runtime.SetMutexProfileFraction(10)
		defer runtime.SetMutexProfileFraction(0)
	}
	t0 = time.Now()
	add("cpu", bundle.CPUFile, t0, writeTo(w.Path(bundle.CPUFile), func(f *os.File) error {
		if err := pprof.StartCPUProfile(f); err != nil {
			return fmt.Errorf("cpu profile: %w (another CPU profile running?)", err)
		}
		t := time.NewTimer(spec.cpu)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
		}
		pprof.StopCPUProfile()
		return nil
	}))
	for _, name := range []string{"heap", "allocs", "goroutine", "mutex", "block"} {
		writeProfile(name, name+".pb.gz")
	}
	// The runtime's proof of leaked goroutines (Go >= 1.27, or 1.26 with
	// GOEXPERIMENT=goroutineleakprofile), and every goroutine's wait time
	// and creating site.
	if pprof.Lookup("goroutineleak") != nil {
		writeProfile("goroutineleak", bundle.GoroutineLeakFile)
	}
	t0 = time.Now()
	add("goroutine-stacks", bundle.GoroutineStackFile, t0, writeTo(w.Path(bundle.GoroutineStackFile), func(f *os.File) error {
		return pprof.Lookup("goroutine").WriteTo(f, 2)
	}))
	t0 = time.Now()
	w.AddJSON("metrics-end", bundle.MetricsEndFile, stats(), time.Since(t0))
	t0 = time.Now()
	w.AddJSON("system-end", bundle.SystemEndFile, systemSnapshot(spec), time.Since(t0))
	m.End = time.Now()
	m.Runtime = bundle.RuntimeInfo{
		GoVersion:  runtime.Version(),
		GOMAXPROCS: runtime.GOMAXPROCS(0),
		GOGC:       gogcString(currentGOGC()),
		GOMEMLIMIT: memLimitString(),
		Source:     "perfdoctor agent: in-process runtime read-back at the end of the capture",
	}
	w.Complete(&m.Manifest)
	sig := "manual"
	if spec.trigger != nil {
		sig = spec.trigger.Signal
	}
	final := filepath.Join(spec.dir, capturePrefix+start.UTC().Format("20060102T150405.000Z")+"-"+sig)
	for i := 2; ; i++ { // two captures in one millisecond: keep both
		if _, err := os.Lstat(final); errors.Is(err, fs.ErrNotExist) {
			break
		}
		final = strings.TrimSuffix(final, "-"+strconv.Itoa(i-1)) + "-" + strconv.Itoa(i)
	}
	if err := w.Finish(m, final); err != nil {
		return rec, err
	}
	rec.Dir, rec.Partial = final, m.Partial
	rec.Bytes, _ = dirSize(final)
	return rec, nil
}

func writeTo(path string, fn func(*os.File) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := fn(f); err != nil {
		f.Close()
		os.Remove(path)
		return err
	}
	return f.Close()
}

// systemSnapshot is the part of bundle.SystemSnapshot the agent knows
// without procfs: its cgroup limits, CPU time and RSS.
func systemSnapshot(spec captureSpec) *bundle.SystemSnapshot {
	user, sys, _ := spec.cpuSeconds()
	goEnv := map[string]string{}
	for _, k := range []string{"GOGC", "GOMEMLIMIT", "GOMAXPROCS", "GODEBUG"} {
		if v, ok := os.LookupEnv(k); ok {
			goEnv[k] = v
		}
	}
	snap := &bundle.SystemSnapshot{
		Time:    time.Now(),
		Machine: bundle.MachineInfo{NumCPU: runtime.NumCPU()},
		Process: &bundle.ProcessInfo{
			PID:              os.Getpid(),
			GoVersion:        runtime.Version(),
			UserCPUSeconds:   user,
			SystemCPUSeconds: sys,
			RSSBytes:         spec.rss(),
			CPUsAllowed:      runtime.NumCPU(),
			GoEnv:            goEnv,
			Build:            ownBuild(),
		},
	}
	if exe, err := os.Executable(); err == nil {
		snap.Process.Executable = exe
		snap.Process.Comm = filepath.Base(exe)
	}
	if l := spec.limits; l != nil {
		snap.Cgroup = &bundle.CgroupInfo{Version: l.Version, Path: l.Path, CPUQuotaCores: l.CPUCores, MemoryLimitBytes: l.MemoryBytes}
	}
	return snap
}

func gogcString(g int) string {
	if g < 0 {
		return "off"
	}
	return strconv.Itoa(g)
}

func memLimitString() string {
	v := readMetric(mGOMEMLIMIT)
	if v <= 0 || v >= 1<<63-1024 {
		return ""
	}
	return strconv.FormatInt(int64(v), 10)
}

// rotate removes the oldest captures until at most maxCount remain and
// they occupy at most maxBytes. The newest capture is never removed, even
// when it alone exceeds the cap.
func rotate(dir string, maxBytes int64, maxCount int) (removed []string, err error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	type capDir struct {
		name string
		size int64
	}
	var caps []capDir
	var total int64
	for _, e := range ents {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), capturePrefix) {
			continue
		}
		n, _ := dirSize(filepath.Join(dir, e.Name()))
		caps = append(caps, capDir{e.Name(), n})
		total += n
	}
	// Names embed the UTC start time, so name order is age order.
	slices.SortFunc(caps, func(a, b capDir) int { return strings.Compare(a.name, b.name) })
	var errs []error
	for len(caps) > 1 && ((maxBytes > 0 && total > maxBytes) || (maxCount > 0 && len(caps) > maxCount)) {
		p := filepath.Join(dir, caps[0].name)
		if err := os.RemoveAll(p); err != nil {
			errs = append(errs, err)
		} else {
			removed = append(removed, p)
		}
		total -= caps[0].size
		caps = caps[1:]
	}
	return removed, errors.Join(errs...)
}

// cleanStale removes temporary capture directories a crash left behind.
func cleanStale(dir string) {
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if e.IsDir() && strings.HasPrefix(e.Name(), ".tmp-capture-") {
			os.RemoveAll(filepath.Join(dir, e.Name()))
		}
	}
}

func dirSize(dir string) (int64, error) {
	var n int64
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n, err
}
