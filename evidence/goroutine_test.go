package evidence

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"runtime/pprof"
	"testing"

	"github.com/google/pprof/profile"
)

// Two goroutine profiles are the window's two ends, whatever their file
// names; a goroutineleak profile and a goroutine dump are recognised by
// content.
func TestGoroutineProfilesAndDump(t *testing.T) {
	var b bytes.Buffer
	if err := pprof.Lookup("goroutine").WriteTo(&b, 0); err != nil {
		t.Fatal(err)
	}
	p, err := profile.Parse(&b)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	write := func(name string, p *profile.Profile) {
		var buf bytes.Buffer
		if err := p.Write(&buf); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	early, late, leak := p.Copy(), p.Copy(), p.Copy()
	early.TimeNanos, late.TimeNanos = 1000, 2000
	leak.SampleType[0].Type = "goroutineleak"
	write("a-late.pb.gz", late) // read first: placement must go by time
	write("b-early.pb.gz", early)
	write("c-leak.pb.gz", leak)
	b.Reset()
	pprof.Lookup("goroutine").WriteTo(&b, 2)
	if err := os.WriteFile(filepath.Join(dir, "stacks.txt"), b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	ev, err := Load(context.Background(), LoadOptions{}, dir)
	if err != nil {
		t.Fatal(err)
	}
	if ev.Profile(GoroutineStart).TimeNanos != 1000 || ev.Profile(Goroutine).TimeNanos != 2000 {
		t.Errorf("start %d, end %d: want 1000, 2000", ev.Profile(GoroutineStart).TimeNanos, ev.Profile(Goroutine).TimeNanos)
	}
	if ev.Profile(GoroutineLeak) == nil {
		t.Error("goroutineleak profile not recognised")
	}
	if ev.GoroutineStacks == nil || len(ev.GoroutineStacks.Goroutines) == 0 {
		t.Errorf("goroutine dump not read; files: %+v", ev.Files)
	}
}
