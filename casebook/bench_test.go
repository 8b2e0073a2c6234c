package casebook

import (
	"context"
	"testing"
	"time"
)

// benchConcurrency is modest: the load generator and the service share the
// machine (2 cores where the README figures come from).
const benchConcurrency = 16

// warmUp runs before the timed requests. It must take D1 fixed past its first
// memory-limit GC cycle (~1 GiB of allocation, ~20k requests), so the figures
// are steady state rather than the heap's first growth.
const warmUp = 3 * time.Second

func BenchmarkD1(b *testing.B) { benchCase(b, "d1") }
func BenchmarkD2(b *testing.B) { benchCase(b, "d2") }

// benchCase starts each variant as a fresh process and drives b.N requests
// through it, closed loop. Run with a request count, e.g.
//
//	go test -run '^$' -bench . -benchtime=20000x -count=5 ./casebook/
func benchCase(b *testing.B, caseName string) {
	for _, variant := range []string{"bad", "fixed"} {
		b.Run(variant, func(b *testing.B) {
			p := startVariant(b, caseName, variant)
			if b.N > 1 { // the testing package's probing run has b.N == 1
				drive(b, context.Background(), p.appURL, benchConcurrency, 0, warmUp)
			}
			b.ResetTimer()
			res := drive(b, context.Background(), p.appURL, benchConcurrency, int64(b.N), 0)
			b.StopTimer()
			b.ReportMetric(res.Throughput, "req/s")
			b.ReportMetric(float64(res.Latency.P99)/float64(time.Millisecond), "p99-ms")
		})
	}
}
