package load

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// BenchmarkClosedLoop measures the generator's cost per request against a
// minimal in-process server (server and client share the CPUs, as they do
// on a loopback benchmark). Compare with wrk through scripts/loadbench.sh.
func BenchmarkClosedLoop(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("ok")) }))
	defer srv.Close()
	b.ResetTimer()
	res, err := Run(context.Background(), Config{URL: srv.URL, Concurrency: 32, MaxRequests: int64(b.N), Duration: time.Minute})
	if err != nil {
		b.Fatal(err)
	}
	if res.Errors > 0 {
		b.Fatalf("errors: %s", res)
	}
	b.ReportMetric(res.Throughput, "req/s")
}
