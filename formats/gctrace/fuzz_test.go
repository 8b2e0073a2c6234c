package gctrace

import (
	"bytes"
	"os"
	"testing"
)

func FuzzParse(f *testing.F) {
	f.Add([]byte(go126))
	f.Add([]byte("gc 1 @0.012s 2%: 0.017+0.82+0.003 ms clock, 0.035+0.12/0.61/0.55+0.007 ms cpu, 4->4->0 MB, 5 MB goal, 4 P (forced)\n"))
	f.Add([]byte("gc 1 @0.1s 1%: 1+1+1 ms clock, 1+1/1/1+1 ms cpu, 4->4->2 MB, 5 MB goal, 2 P\ngc 1 @0.0s 1%: \n"))
	f.Add([]byte("x gc 99999999999999999999 @1e308s 1e308%: NaN+Inf+-1 ms clock"))
	if data, err := os.ReadFile("testdata/d1-bad.log"); err == nil {
		f.Add(data[:min(len(data), 4096)])
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for line := range bytes.SplitSeq(data, []byte("\n")) {
			c, err := ParseLine(string(line))
			if err == nil && (c.At < 0 || c.Share < 0 || c.STW() < 0 || c.CPU() < 0 || c.Procs < 0) {
				t.Fatalf("negative values from %q: %+v", line, c)
			}
		}
		s, err := Summarize(bytes.NewReader(data))
		if err != nil {
			return
		}
		if s.Cycles <= 0 || s.CPUShare < 0 || s.CPUShare > 1 || s.CyclesPerSec < 0 || s.STW.P99 > s.STW.Max {
			t.Fatalf("bad summary %+v", s)
		}
	})
}
