package evidence

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The look-alike corpus (testdata/lookalike) holds what sits next to
// profiles in folders people save: /proc copies, logs, CSV, JSON from other
// tools, HTML error pages, other binaries, gzipped text. None is evidence:
// each is skipped with a one-line reason, and none changes a real profile
// loaded beside it.
func TestLookAlikesSkippedWithReason(t *testing.T) {
	const corpus = "testdata/lookalike"
	entries, err := os.ReadDir(corpus)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) < 30 {
		t.Fatalf("corpus has %d files, want the whole corpus", len(entries))
	}
	// Reasons that must name what the file is.
	want := map[string]string{
		"404.html":          "HTML page",
		"502.html":          "HTML page",
		"proc-vmstat":       "/proc",
		"proc-stat":         "/proc",
		"proc-stat.gz":      "/proc",
		"latency.csv":       "CSV",
		"elf-head.bin":      "ELF",
		"app.jar":           "zip archive",
		"pixel.png":         "image",
		"perf.data.head":    "perf script",
		"gctrace.log":       "--gctrace",
		"pprof-rejects.bin": "not a valid profile",
		"chrome-trace.json": "JSON",
		"array.json":        "JSON array",
	}
	for _, ent := range entries {
		path := filepath.Join(corpus, ent.Name())
		_, err := Load(context.Background(), LoadOptions{}, path)
		if err == nil {
			t.Errorf("%s: read as evidence", ent.Name())
			continue
		}
		msg := err.Error()
		if strings.Contains(msg, "\n") {
			t.Errorf("%s: error spans lines: %q", ent.Name(), msg)
		}
		if w, ok := want[ent.Name()]; ok && !strings.Contains(msg, w) {
			t.Errorf("%s: reason %q does not say %q", ent.Name(), msg, w)
		}
	}

	// As a directory: nothing to diagnose, every file listed with a reason.
	dir := t.TempDir()
	for _, ent := range entries {
		data, err := os.ReadFile(filepath.Join(corpus, ent.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, ent.Name()), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := Load(context.Background(), LoadOptions{}, dir); !errors.Is(err, ErrNoEvidence) {
		t.Fatalf("directory of look-alikes: %v, want ErrNoEvidence", err)
	}

	// Beside a real CPU profile, the profile is read as it is alone.
	cpu := writeCPU(t, t.TempDir(), "cpu.pb.gz")
	alone, err := Load(context.Background(), LoadOptions{}, cpu)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(cpu)
	os.WriteFile(filepath.Join(dir, "profile"), data, 0o644)
	ev, err := Load(context.Background(), LoadOptions{}, dir)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := SampleCount(ev.Profile(CPU)), SampleCount(alone.Profile(CPU)); got != want {
		t.Errorf("CPU samples %d beside the look-alikes, %d alone", got, want)
	}
	if len(ev.Profiles) != 1 || ev.MetricsEnd != nil || ev.TracePath != "" {
		t.Errorf("look-alikes became evidence: profiles %v, metrics %v, trace %q", ev.Profiles, ev.MetricsEnd, ev.TracePath)
	}
	if n := len(ev.Skipped()); n != len(entries) {
		t.Errorf("%d files skipped, want %d", n, len(entries))
	}
	for _, f := range ev.Skipped() {
		if f.Reason == "" || strings.Contains(f.Reason, "\n") {
			t.Errorf("%s: reason %q", f.Path, f.Reason)
		}
	}
}
