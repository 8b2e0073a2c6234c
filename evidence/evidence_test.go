package evidence

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strings"
	"sync"
	"testing"
	"time"
)

// writeProfile saves the named runtime profile as curl would save it.
func writeProfile(t *testing.T, dir, file, name string, debug int) string {
	t.Helper()
	var buf bytes.Buffer
	if err := pprof.Lookup(name).WriteTo(&buf, debug); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, file)
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func writeCPU(t *testing.T, dir, file string) string {
	t.Helper()
	var buf bytes.Buffer
	if err := pprof.StartCPUProfile(&buf); err != nil {
		t.Fatal(err)
	}
	end := time.Now().Add(200 * time.Millisecond)
	for time.Now().Before(end) {
	}
	pprof.StopCPUProfile()
	path := filepath.Join(dir, file)
	os.WriteFile(path, buf.Bytes(), 0o644)
	return path
}

func TestPlainDirectoryRecognisedByContent(t *testing.T) {
	dir := t.TempDir()
	// Misleading names on purpose: content decides.
	writeCPU(t, dir, "profile")
	writeProfile(t, dir, "a.out", "allocs", 0)
	writeProfile(t, dir, "h1", "heap", 0)
	writeProfile(t, dir, "g", "goroutine", 0)
	writeProfile(t, dir, "heap.txt", "heap", 1)
	os.WriteFile(filepath.Join(dir, "notes.md"), []byte("# my notes\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "index.html"), []byte("<html>pprof</html>"), 0o644)

	ev, err := Load(context.Background(), LoadOptions{}, dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []Kind{CPU, Allocs, Heap, Goroutine} {
		if ev.Profile(k) == nil {
			t.Errorf("%s profile not recognised", k)
		}
	}
	if ev.MetricsEnd == nil || ev.MetricsEnd.NumGC == 0 && ev.MetricsEnd.Mallocs == 0 {
		t.Errorf("heap?debug=1 statistics not read: %+v", ev.MetricsEnd)
	}
	skipped := ev.Skipped()
	if len(skipped) != 2 {
		t.Fatalf("skipped = %+v, want notes.md and index.html", skipped)
	}
}

func TestMutexAndBlockToldApart(t *testing.T) {
	runtime.SetMutexProfileFraction(1)
	runtime.SetBlockProfileRate(1)
	defer runtime.SetMutexProfileFraction(0)
	defer runtime.SetBlockProfileRate(0)
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 2000 {
				mu.Lock()
				time.Sleep(time.Microsecond)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	dir := t.TempDir()
	a := writeProfile(t, dir, "one", "mutex", 0)
	b := writeProfile(t, dir, "two", "block", 0)
	ev, err := Load(context.Background(), LoadOptions{}, a, b)
	if err != nil {
		t.Fatal(err)
	}
	if ev.Profile(Mutex) == nil || ev.Profile(Block) == nil {
		t.Fatalf("got %v", ev.Files)
	}
}

func TestBadInputs(t *testing.T) {
	dir := t.TempDir()
	cpu := writeCPU(t, dir, "cpu.pb.gz")
	data, _ := os.ReadFile(cpu)
	truncated := filepath.Join(dir, "truncated.pb.gz")
	os.WriteFile(truncated, data[:len(data)/2], 0o644)
	garbage := filepath.Join(dir, "garbage.pb.gz")
	os.WriteFile(garbage, []byte{0x1f, 0x8b, 0x08, 0, 1, 2, 3}, 0o644)
	html := filepath.Join(dir, "page.pb.gz")
	os.WriteFile(html, []byte("<!DOCTYPE html><title>404</title>"), 0o644)
	empty := t.TempDir()

	for name, tc := range map[string]struct {
		paths []string
		want  string
	}{
		"truncated gzip":  {[]string{truncated}, "not a valid profile"},
		"corrupt gzip":    {[]string{garbage}, "not a valid profile"},
		"html":            {[]string{html}, "not a format perfdoctor reads"},
		"empty directory": {[]string{empty}, "empty directory"},
		"missing":         {[]string{filepath.Join(dir, "nope")}, "no such file"},
		"nothing given":   {nil, "no input"},
	} {
		_, err := Load(context.Background(), LoadOptions{}, tc.paths...)
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: error %v, want one line containing %q", name, err, tc.want)
		}
	}

	// In a directory, unreadable files are skipped and listed, not fatal.
	onlyBad := t.TempDir()
	os.WriteFile(filepath.Join(onlyBad, "x.pb.gz"), data[:len(data)/2], 0o644)
	if _, err := Load(context.Background(), LoadOptions{}, onlyBad); !errors.Is(err, ErrNoEvidence) {
		t.Errorf("directory of unreadable files: %v, want ErrNoEvidence", err)
	}
	mixed := t.TempDir()
	os.WriteFile(filepath.Join(mixed, "x.pb.gz"), data[:len(data)/2], 0o644)
	os.WriteFile(filepath.Join(mixed, "cpu"), data, 0o644)
	ev, err := Load(context.Background(), LoadOptions{}, mixed)
	if err != nil || ev.Profile(CPU) == nil || len(ev.Skipped()) != 1 {
		t.Errorf("mixed directory: %v, skipped %v", err, ev.Skipped())
	}
}

func TestTwoHeapsOrderedByTime(t *testing.T) {
	dir := t.TempDir()
	first := writeProfile(t, dir, "first", "heap", 0)
	time.Sleep(10 * time.Millisecond)
	second := writeProfile(t, dir, "second", "heap", 0)
	ev, err := Load(context.Background(), LoadOptions{}, second, first)
	if err != nil {
		t.Fatal(err)
	}
	if ev.Profile(HeapStart) == nil || ev.Profile(Heap).TimeNanos < ev.Profile(HeapStart).TimeNanos {
		t.Error("heap profiles not ordered start/end")
	}
}

func TestPackagePath(t *testing.T) {
	for fn, want := range map[string]bool{
		"net/http.(*conn).serve":                  true,
		"sync.(*Mutex).Lock":                      true,
		"main.handler":                            false,
		"github.com/IBM/sarama.(*Broker).Produce": false,
		"example.com/svc/internal/db.Query":       false,
		"memeqbody":                               true, // internal/bytealg's assembly: no package in the symbol
		"aeshashbody":                             true,
		"ngx_http_process_request":                false, // a native program's own C function
	} {
		if got := IsStdlib(fn); got != want {
			t.Errorf("IsStdlib(%q) = %v, want %v", fn, got, want)
		}
	}
	for fn, want := range map[string]bool{"gcWriteBarrier": true, "aeshashbody": true, "memeqbody": false, "runtime.mallocgc": true, "main.f": false} {
		if got := IsRuntime(fn); got != want {
			t.Errorf("IsRuntime(%q) = %v, want %v", fn, got, want)
		}
	}
}
