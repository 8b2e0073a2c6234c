package casebook

import (
	"flag"
	"strconv"
	"strings"
	"testing"
)

// Throughput of bad against fixed for the library cases, each variant in its
// own process (benchCase). C1 compresses 1 MB per request (tens of requests
// per second), so it takes a smaller request count than the others:
//
//	go test -run '^$' -bench 'A1|A2|C3|C4|D3' -benchtime=20000x -count=5 ./casebook/
//	go test -run '^$' -bench 'C1' -benchtime=100x -count=5 ./casebook/
func BenchmarkA1(b *testing.B) { benchCase(b, "a1") }
func BenchmarkA2(b *testing.B) { benchCase(b, "a2") }
func BenchmarkC3(b *testing.B) { benchCase(b, "c3") }
func BenchmarkC4(b *testing.B) { benchCase(b, "c4") }
func BenchmarkD3(b *testing.B) { benchCase(b, "d3") }

// c1MaxRequests keeps `-bench . -benchtime=20000x` from spending an hour on
// C1: with a larger request count it is skipped.
const c1MaxRequests = 1000

func BenchmarkC1(b *testing.B) {
	if f := flag.Lookup("test.benchtime"); f != nil {
		if n, err := strconv.Atoi(strings.TrimSuffix(f.Value.String(), "x")); err == nil && n > c1MaxRequests {
			b.Skipf("C1 compresses 1 MB per request: run it alone with -benchtime=100x (got %dx)", n)
		}
	}
	benchCase(b, "c1")
}
