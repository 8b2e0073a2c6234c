package trace

import (
	"bytes"
	"errors"
	"testing"
)

// FuzzSummarize feeds arbitrary bytes, seeded with a real trace of the Go
// running the test and pieces of it, to Summarize: it must return a
// summary or one of its two errors, never panic or hang.
func FuzzSummarize(f *testing.F) {
	real := record(f, func() { contend(3, 30) })
	f.Add(real)
	f.Add(real[:16])
	f.Add(real[:len(real)/2])
	f.Add(real[:len(real)-1])
	f.Add([]byte("go 1.26 trace\x00\x00\x00"))
	f.Add([]byte("go 1.22 trace\x00\x00\x00\x01\x02\x03"))
	f.Add([]byte("not a trace"))
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 1<<20 {
			return
		}
		s, err := Summarize(bytes.NewReader(data))
		switch {
		case err == nil && s == nil:
			t.Fatal("nil summary without an error")
		case err != nil && !errors.Is(err, ErrNotTrace) && !errors.Is(err, ErrCorrupt):
			t.Fatalf("unexpected error kind: %v", err)
		case err == nil:
			if s.Window < 0 || s.Goroutines.Max < 0 || s.SchedLatency.P99 > s.SchedLatency.Max {
				t.Fatalf("inconsistent summary: %+v", s)
			}
		}
	})
}
