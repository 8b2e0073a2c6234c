package trace

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/pprof"
	"strings"
	"testing"
	"time"
)

var peerURL string

// twoCalls is a handler that calls a slow peer twice, one call after the other.
func twoCalls(w http.ResponseWriter, r *http.Request) {
	for range 2 {
		resp, err := http.Get(peerURL)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		io.Copy(w, resp.Body)
		resp.Body.Close()
	}
}

func TestRequestPathsByHandler(t *testing.T) {
	peer := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(3 * time.Millisecond)
		io.WriteString(w, "ok")
	}))
	defer peer.Close()
	peerURL = peer.URL
	svc := httptest.NewServer(http.HandlerFunc(twoCalls))
	defer svc.Close()
	const n = 30
	sum := summarize(t, record(t, func() {
		for range n {
			resp, err := http.Get(svc.URL)
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}))
	for _, p := range sum.Requests {
		if p.Handler != "github.com/perfdoctor/perfdoctor/evidence/trace.twoCalls" {
			continue
		}
		// The first request of the connection started before the trace saw it wait.
		if p.Latency.Count < n-2 || p.Latency.P50 < 6*time.Millisecond {
			t.Errorf("%d requests, p50 %v; want about %d of two 3 ms calls", p.Latency.Count, p.Latency.P50, n)
		}
		var client time.Duration
		for _, w := range p.Waits {
			for _, f := range sum.Waits[w.Site].Stack {
				if strings.HasPrefix(f.Func, "net/http.(*persistConn).roundTrip") {
					client += w.Total
					break
				}
			}
		}
		if client < p.Latency.Total/2 {
			t.Errorf("waits on the client %v of %v request time, want most of it", client, p.Latency.Total)
		}
		return
	}
	t.Fatalf("no request path for twoCalls in %+v", sum.Requests)
}

// The profiler's endpoints are the collector's requests, not the
// service's: a goroutine profile fetched while the trace runs is no request
// path.
func TestProfilerRequestsAreNotPaths(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	svc := httptest.NewServer(mux)
	defer svc.Close()
	sum := summarize(t, record(t, func() {
		for range 10 {
			resp, err := http.Get(svc.URL + "/debug/pprof/goroutine?debug=1")
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}))
	for _, p := range sum.Requests {
		if strings.HasPrefix(p.Handler, "net/http/pprof.") {
			t.Errorf("the profiler's endpoint as a request path: %s, %d requests", p.Handler, p.Latency.Count)
		}
	}
}
