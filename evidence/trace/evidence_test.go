package trace_test

import (
	"bytes"
	"compress/gzip"
	"errors"
	"os"
	"path/filepath"
	rtrace "runtime/trace"
	"strings"
	"sync"
	"testing"

	"github.com/perfdoctor/perfdoctor/bundle"
	"github.com/perfdoctor/perfdoctor/evidence"
	"github.com/perfdoctor/perfdoctor/evidence/trace"
)

// Evidence loads a bundle's trace.out by content and summarises it as it
// loads: Trace reads nothing.
func TestEvidenceTrace(t *testing.T) {
	var buf bytes.Buffer
	if err := rtrace.Start(&buf); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 10 {
		wg.Go(func() {})
	}
	wg.Wait()
	rtrace.Stop()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, bundle.TraceFile), buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	ev, err := evidence.Load(t.Context(), evidence.LoadOptions{}, dir)
	if err != nil {
		t.Fatalf("load a directory holding only a trace: %v", err)
	}
	s, err := ev.Trace()
	if err != nil || s == nil || s.Goroutines.Created < 10 {
		t.Fatalf("Trace() = %+v, %v", s, err)
	}
	if again, _ := ev.Trace(); again != s {
		t.Error("the summary is not computed once")
	}

	none := &evidence.Evidence{}
	if _, err := none.Trace(); !errors.Is(err, evidence.ErrNoTrace) {
		t.Errorf("no trace: err = %v", err)
	}
	set := &evidence.Evidence{TraceSummary: &trace.Summary{GOMAXPROCS: 3}}
	if s, err := set.Trace(); err != nil || s.GOMAXPROCS != 3 {
		t.Errorf("a summary set beforehand is not returned: %+v, %v", s, err)
	}
	cut := filepath.Join(t.TempDir(), "trace.out")
	if err := os.WriteFile(cut, buf.Bytes()[:buf.Len()/2], 0o644); err != nil {
		t.Fatal(err)
	}
	// Loaded, an unreadable trace says why, and is listed with the skipped files.
	ev, err = evidence.Load(t.Context(), evidence.LoadOptions{}, cut)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ev.Trace(); !errors.Is(err, trace.ErrCorrupt) {
		t.Errorf("truncated trace: err = %v", err)
	}
	if sk := ev.Skipped(); len(sk) != 1 || !strings.Contains(sk[0].Reason, "truncated or corrupt") {
		t.Errorf("unreadable trace not listed as skipped: %+v", ev.Files)
	}
}

// A gzipped trace is read as the trace is.
func TestGzippedTrace(t *testing.T) {
	var buf bytes.Buffer
	if err := rtrace.Start(&buf); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 10 {
		wg.Go(func() {})
	}
	wg.Wait()
	rtrace.Stop()
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(buf.Bytes())
	zw.Close()
	path := filepath.Join(t.TempDir(), "trace.out.gz")
	if err := os.WriteFile(path, gz.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	ev, err := evidence.Load(t.Context(), evidence.LoadOptions{}, path)
	if err != nil {
		t.Fatal(err)
	}
	s, err := ev.Trace()
	if err != nil || s.Goroutines.Created == 0 || s.Partial != "" {
		t.Errorf("gzipped trace: %+v, %v", s, err)
	}
}
