package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"testing"
	"time"

	"github.com/perfdoctor/perfdoctor/bundle"
	"github.com/perfdoctor/perfdoctor/diagnose"
	"github.com/perfdoctor/perfdoctor/evidence"
	"github.com/perfdoctor/perfdoctor/report"
)

func captureAgent(t *testing.T, dir string, o Options) *Agent {
	t.Helper()
	o.CaptureDir = dir
	if o.CaptureCPU == 0 {
		o.CaptureCPU = 200 * time.Millisecond
	}
	if o.WatchInterval == 0 {
		o.WatchInterval = time.Hour // tests feed samples by hand
	}
	a, _ := startFake(t, o)
	return a
}

// A capture is a bundle perfdoctor diagnose reads as-is.
func TestCaptureIsDiagnosable(t *testing.T) {
	dir := t.TempDir()
	a := captureAgent(t, dir, Options{})
	rec, err := a.Capture(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if rec.Partial || rec.Bytes == 0 || !strings.HasPrefix(filepath.Base(rec.Dir), capturePrefix) {
		t.Fatalf("%+v", rec)
	}
	ev, err := evidence.Load(t.Context(), evidence.LoadOptions{}, rec.Dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []evidence.Kind{evidence.CPU, evidence.Heap, evidence.HeapStart, evidence.Allocs, evidence.Goroutine, evidence.GoroutineStart, evidence.Mutex, evidence.Block} {
		if ev.Profile(k) == nil {
			t.Errorf("no %s profile", k)
		}
	}
	if ev.GoroutineStacks == nil {
		t.Error("no goroutine dump")
	}
	if served := pprof.Lookup("goroutineleak") != nil; served != (ev.Profile(evidence.GoroutineLeak) != nil) {
		t.Errorf("goroutineleak profile in the runtime %v, in the capture %v", served, !served)
	}
	if skipped := ev.Skipped(); len(skipped) > 0 {
		t.Errorf("files not understood: %+v", skipped)
	}
	if ev.MetricsStart == nil || ev.MetricsEnd == nil || ev.MetricsEnd.Runtime == nil || len(ev.MetricsEnd.Runtime.Values) == 0 {
		t.Fatal("metrics samples missing or without the runtime/metrics snapshot")
	}
	if _, ok := ev.GC(); !ok {
		t.Error("no GC window from the two samples")
	}
	if ev.SystemEnd == nil || ev.SystemEnd.Cgroup == nil || ev.SystemEnd.Cgroup.MemoryLimitBytes != 1<<30 {
		t.Errorf("system snapshot: %+v", ev.SystemEnd)
	}
	if w := ev.Window(); w < 150*time.Millisecond || w > 2*time.Second {
		t.Errorf("window %v", w)
	}
	m := ev.Manifest
	if m == nil || m.Partial || !m.OK("cpu") || !m.OK("metrics-end") || m.Runtime.GoVersion == "" || m.Runtime.GOGC == "" {
		t.Fatalf("manifest: %+v", m)
	}
	var withTrigger captureManifest
	b, _ := os.ReadFile(filepath.Join(rec.Dir, bundle.ManifestFile))
	if err := json.Unmarshal(b, &withTrigger); err != nil || withTrigger.Trigger == nil || withTrigger.Trigger.Signal != "manual" {
		t.Errorf("trigger in manifest: %v %+v", err, withTrigger.Trigger)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("capture dir holds %d entries, want just the capture", len(ents))
	}
}

// A fed sample that jumps starts a capture recording the trigger.
func TestTriggerCaptures(t *testing.T) {
	dir := t.TempDir()
	tr := Triggers{Goroutines: Threshold{Above: 50}, Baseline: 3, Cooldown: time.Hour}
	a := captureAgent(t, dir, Options{Triggers: &tr})
	ctx := context.Background()
	s := Sample{Time: time.Now().Add(time.Second), Goroutines: 20} // after the origin taken at start
	a.tick(ctx, s)
	if st := a.Status(); len(st.Captures) != 0 || st.Watch.Capturing {
		t.Fatalf("captured without a trigger: %+v", st.Captures)
	}
	s.Time, s.Goroutines = s.Time.Add(time.Second), 5000
	a.tick(ctx, s)
	rec := waitCapture(t, a, 1)
	if rec.Error != "" || rec.Trigger == nil || rec.Trigger.Signal != SignalGoroutines || rec.Trigger.Value != 5000 {
		t.Fatalf("%+v", rec)
	}
	m, err := bundle.ReadManifest(rec.Dir)
	if err != nil || !strings.HasSuffix(rec.Dir, "-goroutines") || m.Partial {
		t.Fatalf("%v %s", err, rec.Dir)
	}
	// Cooldown: the next breach does not capture.
	s.Time = s.Time.Add(time.Second)
	a.tick(ctx, s)
	time.Sleep(50 * time.Millisecond)
	if n := len(a.Status().Captures); n != 1 {
		t.Fatalf("%d captures during cooldown", n)
	}
}

func waitCapture(t *testing.T, a *Agent, n int) CaptureRecord {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if st := a.Status(); len(st.Captures) >= n && !st.Watch.Capturing {
			return st.Captures[n-1]
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatal("no capture")
	return CaptureRecord{}
}

// Captures beyond the disk cap are rotated out, oldest first; the newest
// stays even when it alone exceeds the cap.
func TestRotation(t *testing.T) {
	dir := t.TempDir()
	mk := func(name string, size int) {
		p := filepath.Join(dir, name)
		os.MkdirAll(p, 0o755)
		os.WriteFile(filepath.Join(p, "cpu.pb.gz"), make([]byte, size), 0o644)
	}
	mk("capture-20260101T000000.000Z-cpu", 400)
	mk("capture-20260101T000001.000Z-rss", 400)
	mk("capture-20260101T000002.000Z-gc_share", 400)
	mk("unrelated", 10_000) // not ours: never touched
	removed, err := rotate(dir, 900, 10)
	if err != nil || len(removed) != 1 || !strings.Contains(removed[0], "000000") {
		t.Fatalf("removed %v, %v", removed, err)
	}
	removed, _ = rotate(dir, 900, 1) // count cap
	if len(removed) != 1 || !strings.Contains(removed[0], "000001") {
		t.Fatalf("count cap removed %v", removed)
	}
	removed, _ = rotate(dir, 10, 10) // the newest alone exceeds the cap
	if len(removed) != 0 {
		t.Fatalf("removed the newest: %v", removed)
	}
	ents, _ := os.ReadDir(dir)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if strings.Join(names, ",") != "capture-20260101T000002.000Z-gc_share,unrelated" {
		t.Fatalf("left %v", names)
	}
}

// Real captures under a cap that holds one: the older is rotated out.
func TestCaptureRotatesUnderCap(t *testing.T) {
	dir := t.TempDir()
	a := captureAgent(t, dir, Options{CaptureMaxBytes: 1, CaptureCPU: 50 * time.Millisecond})
	first, err := a.Capture(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	second, err := a.Capture(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(first.Dir); !os.IsNotExist(err) {
		t.Errorf("oldest capture kept: %v", err)
	}
	if _, err := os.Stat(second.Dir); err != nil {
		t.Errorf("newest capture removed: %v", err)
	}
}

// A stale temporary directory from a crash is cleaned at start.
func TestStaleTempCleaned(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, ".tmp-capture-123"), 0o755)
	captureAgent(t, dir, Options{})
	if _, err := os.Stat(filepath.Join(dir, ".tmp-capture-123")); !os.IsNotExist(err) {
		t.Error("stale temp dir kept")
	}
}

// beforeTrigger is work done in the seconds before a capture: the flight
// recorder's trace must show its goroutines.
func beforeTrigger(n int) {
	done := make(chan struct{}, n)
	for range n {
		go func() { time.Sleep(time.Millisecond); done <- struct{}{} }()
	}
	for range n {
		<-done
	}
}

// A capture starts with the flight recorder's trace: the seconds before the
// trigger, which the capture's own window cannot see.
func TestCaptureHasTheTraceBeforeTheTrigger(t *testing.T) {
	dir := t.TempDir()
	a := captureAgent(t, dir, Options{FlightRecorder: true, FlightRecorderAge: 2 * time.Second})
	if st := a.Status(); st.Flight == nil || !st.Flight.On {
		t.Fatalf("flight recorder not on: %+v", st.Flight)
	}
	// A second agent in the process must not take the recorder.
	b := captureAgent(t, t.TempDir(), Options{FlightRecorder: true})
	if st := b.Status(); st.Flight == nil || st.Flight.On || st.Flight.Error != errFlightTaken.Error() {
		t.Errorf("second agent's flight recorder: %+v", st.Flight)
	}
	beforeTrigger(300)
	time.Sleep(50 * time.Millisecond)
	rec, err := a.Capture(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	m, err := bundle.ReadManifest(rec.Dir)
	if err != nil {
		t.Fatal(err)
	}
	if m.Trace == nil || m.Trace.Source != "flight recorder" || m.Trace.End.Before(rec.Time) || m.Trace.End.Sub(rec.Time) > time.Second {
		t.Fatalf("manifest trace window %+v, capture at %s", m.Trace, rec.Time)
	}
	ev, err := evidence.Load(t.Context(), evidence.LoadOptions{}, rec.Dir)
	if err != nil {
		t.Fatal(err)
	}
	sum, err := ev.Trace()
	if err != nil {
		t.Fatal(err)
	}
	created := 0
	for _, s := range sum.Goroutines.Sites {
		for _, f := range s.Stack {
			if strings.HasSuffix(f.Func, ".beforeTrigger") {
				created += s.Created
				break
			}
		}
	}
	if created < 300 {
		t.Errorf("the trace shows %d of the 300 goroutines started before the trigger", created)
	}
	// diagnose reads the capture with the trace window ending at the trigger.
	r, err := diagnose.Run(t.Context(), diagnose.Request{Evidence: ev, Tool: "perfdoctor"})
	if err != nil {
		t.Fatal(err)
	}
	if w := r.Inputs.TraceWindow; w == nil || !w.End.Equal(m.Trace.End) || w.Seconds <= 0 {
		t.Fatalf("report trace window %+v, manifest %+v", w, m.Trace)
	}
	var text bytes.Buffer
	if err := report.WriteText(&text, r); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), "flight recorder: the ") || !strings.Contains(text.String(), "before the trigger at") {
		t.Errorf("text report does not place the trace before the trigger:\n%s", text.String())
	}
}
