package trace

import (
	"bytes"
	"os"
	"testing"
)

// BenchmarkSummarize reads the trace named by PERFDOCTOR_BENCH_TRACE (a
// `perfdoctor collect` trace.out), or else one recorded here of HTTP
// requests calling a slow peer.
func BenchmarkSummarize(b *testing.B) {
	var data []byte
	if path := os.Getenv("PERFDOCTOR_BENCH_TRACE"); path != "" {
		var err error
		if data, err = os.ReadFile(path); err != nil {
			b.Fatal(err)
		}
	} else {
		data = record(b, func() { askSlowPeer(b, 200) })
	}
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Summarize(bytes.NewReader(data)); err != nil {
			b.Fatal(err)
		}
	}
}
