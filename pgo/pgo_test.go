package pgo

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"testing"
	"time"

	"github.com/google/pprof/profile"
)

var sink uint64

// spin burns CPU for d under a pprof label, as a request handler tagged
// with a user ID would.
func spin(d time.Duration) {
	pprof.Do(context.Background(), pprof.Labels("user", "alice@example.com"), func(context.Context) {
		for end := time.Now().Add(d); time.Now().Before(end); {
			for i := range 10000 {
				sink = sink*31 + uint64(i)
			}
		}
	})
}

// cpuProfile writes a real CPU profile of this process into a new
// directory, as a bundle's cpu.pb.gz.
func cpuProfile(t *testing.T, d time.Duration) string {
	t.Helper()
	dir := t.TempDir()
	f, err := os.Create(filepath.Join(dir, "cpu.pb.gz"))
	if err != nil {
		t.Fatal(err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		t.Fatal(err)
	}
	spin(d)
	pprof.StopCPUProfile()
	f.Close()
	return dir
}

func TestMergeBuildsWithPGO(t *testing.T) {
	a, b := cpuProfile(t, 600*time.Millisecond), cpuProfile(t, 600*time.Millisecond)
	res, err := Merge([]string{a, b})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Sources) != 2 || res.Sources[0].Samples == 0 || res.Sources[1].Samples == 0 {
		t.Fatalf("sources %+v", res.Sources)
	}
	var samples int64
	for _, s := range res.Profile.Sample {
		samples += s.Value[0]
		if len(s.Label) > 0 || len(s.NumLabel) > 0 {
			t.Fatalf("a label survived: %v", s.Label)
		}
	}
	if samples != res.Sources[0].Samples+res.Sources[1].Samples {
		t.Errorf("merged %d samples, sources hold %d and %d", samples, res.Sources[0].Samples, res.Sources[1].Samples)
	}
	if len(res.Warnings) == 0 || !strings.Contains(res.Warnings[0], "CPU samples in all") {
		t.Errorf("~120 samples: want the thin-profile warning, got %v", res.Warnings)
	}
	// The hot function is there with its start line, which PGO's line
	// offsets are counted from.
	found := false
	for _, fn := range res.Profile.Function {
		if strings.HasSuffix(fn.Name, "pgo.spin.func1") && fn.StartLine > 0 {
			found = true
		}
	}
	if !found {
		t.Error("pgo.spin.func1 with its start line missing from the merged profile")
	}
}

func TestTrimRefusesOtherProfiles(t *testing.T) {
	var buf bytes.Buffer
	if err := pprof.Lookup("heap").WriteTo(&buf, 0); err != nil {
		t.Fatal(err)
	}
	heap, err := profile.Parse(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Trim(heap); err == nil || !strings.Contains(err.Error(), "not a Go CPU profile") {
		t.Errorf("heap profile: err = %v", err)
	}
}

func TestMergeBadInput(t *testing.T) {
	empty := t.TempDir()
	for name, paths := range map[string][]string{
		"none":       nil,
		"missing":    {filepath.Join(empty, "nope")},
		"no profile": {empty},
		"not pprof":  {writeFile(t, "junk.pb.gz", "not a profile")},
	} {
		if _, err := Merge(paths); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func writeFile(t *testing.T, name, content string) string {
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}
