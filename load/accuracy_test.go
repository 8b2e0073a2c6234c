package load

import (
	"context"
	"net"
	"net/http"
	"sync/atomic"
	"testing"
	"time"
)

// TestLatencyAccuracy: the server delays every 10th request by 20ms, so
// exactly 10% of latencies are >= 20ms and the rest are fast. The reported
// percentiles must say so, in both loops. Tolerances allow for a loaded
// 2-core machine: fast requests under 10ms, delayed ones at 20ms plus at
// most 30ms of scheduling noise.
func TestLatencyAccuracy(t *testing.T) {
	const delay = 20 * time.Millisecond
	var n atomic.Int64
	srv, _ := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1)%10 == 0 {
			time.Sleep(delay)
		}
	})
	for _, cfg := range []Config{
		{URL: srv.URL, Concurrency: 4, MaxRequests: 2000, Duration: time.Minute},
		{URL: srv.URL, Concurrency: 16, Rate: 400, Duration: 3 * time.Second},
	} {
		res, err := Run(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Log(res)
		if res.Errors != 0 || res.Requests < 1000 {
			t.Fatalf("%s: want >= 1000 requests, no errors", res)
		}
		check := func(what string, at func(p float64) time.Duration) {
			// 90% fast, 10% delayed: p85 is fast; p95 and p99 are the delay.
			if p := at(85); p >= 10*time.Millisecond {
				t.Errorf("%s %s: p85 = %s, want < 10ms (90%% of requests are not delayed)", res.Mode, what, p)
			}
			for _, p := range []float64{95, 99} {
				if v := at(p); v < delay || v > delay+30*time.Millisecond {
					t.Errorf("%s %s: p%g = %s, want %s .. %s", res.Mode, what, p, v, delay, delay+30*time.Millisecond)
				}
			}
		}
		at := func(p float64) time.Duration {
			for _, q := range res.Table {
				if q.Percentile == p {
					return q.Value
				}
			}
			t.Fatalf("no p%g in the table", p)
			return 0
		}
		check("latency", at)
		if res.Mode == modeOpen {
			check("service time", func(p float64) time.Duration {
				return map[float64]time.Duration{85: res.Service.P75, 95: res.Service.P95, 99: res.Service.P99}[p]
			})
		}
		if res.Latency.Max < delay {
			t.Errorf("%s: max %s below the delay", res.Mode, res.Latency.Max)
		}
	}
}

// TestStallShowsInOpenLoop: the server stops answering for one second. A
// closed loop sends nothing while its workers wait, so the stall is a
// handful of slow requests and p90 stays low (coordinated omission). The
// open loop keeps its schedule, so every request due during the stall waits
// for its end: about a third of the run's requests, with corrected
// latencies spread up to 1s, while their service time stays short.
func TestStallShowsInOpenLoop(t *testing.T) {
	const stall = time.Second
	var stallFrom atomic.Int64 // unix nanos
	srv, _ := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		from := time.Unix(0, stallFrom.Load())
		if now := time.Now(); now.After(from) && now.Before(from.Add(stall)) {
			time.Sleep(time.Until(from.Add(stall)))
		}
	})
	run := func(cfg Config) *Result {
		stallFrom.Store(time.Now().Add(time.Second).UnixNano())
		res, err := Run(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Log(res)
		return res
	}
	closed := run(Config{URL: srv.URL, Concurrency: 4, Duration: 3 * time.Second})
	open := run(Config{URL: srv.URL, Concurrency: 32, Rate: 500, Duration: 3 * time.Second})

	if closed.Latency.Max < stall*8/10 {
		t.Errorf("closed loop max %s: the stall did not happen", closed.Latency.Max)
	}
	if closed.Latency.P90 > 100*time.Millisecond {
		t.Errorf("closed loop p90 %s: expected the stall to hide in a few requests", closed.Latency.P90)
	}
	if open.Latency.P90 < 500*time.Millisecond {
		t.Errorf("open loop corrected p90 %s, want >= 500ms: the stall is hidden", open.Latency.P90)
	}
	if open.Service.P75 > 100*time.Millisecond {
		t.Errorf("open loop service p75 %s: most requests were served fast once sent", open.Service.P75)
	}
	if open.LateSends < 100 {
		t.Errorf("open loop: %d late sends, want the stall's backlog (hundreds)", open.LateSends)
	}
	// The timeline shows when: a calm first second, then the stall.
	peak := time.Duration(0)
	for _, s := range open.Timeline {
		peak = max(peak, s.P99)
	}
	if len(open.Timeline) < 3 || open.Timeline[0].P99 > 100*time.Millisecond || peak < 500*time.Millisecond {
		t.Errorf("timeline does not show the stall after a calm first second: %+v", open.Timeline)
	}
}

func TestOpenLoopRate(t *testing.T) {
	srv, _ := newServer(t, func(http.ResponseWriter, *http.Request) {})
	res, err := Run(context.Background(), Config{URL: srv.URL, Concurrency: 8, Rate: 1000, Duration: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	// 2000 sends are due; a loaded machine may leave a few unsent or late,
	// but the run must neither exceed the schedule nor fall far behind.
	if res.Requests > 2000 || res.Requests+res.Dropped+res.Unfinished < 1990 || res.Requests < 1800 {
		t.Errorf("%s: want ~2000 requests", res)
	}
	if len(res.Timeline) < 2 || res.Timeline[0].OK < 800 {
		t.Errorf("timeline %+v: want ~1000/s", res.Timeline)
	}
}

func TestUDP(t *testing.T) {
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	var got atomic.Int64
	go func() {
		buf := make([]byte, 2048)
		for {
			n, addr, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			if string(buf[:n]) == "ping" {
				got.Add(1)
				pc.WriteTo([]byte("pong"), addr)
			}
		}
	}()
	url := "udp://" + pc.LocalAddr().String()
	res, err := Run(context.Background(), Config{URL: url, Body: []byte("ping"), Concurrency: 4, MaxRequests: 1000, Duration: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if res.Requests != 1000 || res.Errors != 0 || got.Load() != 1000 {
		t.Errorf("reply mode: %s, server saw %d", res, got.Load())
	}
	got.Store(0)
	res, err = Run(context.Background(), Config{URL: url, Body: []byte("ping"), UDPMode: UDPFireForget, Concurrency: 1, Rate: 500, Duration: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	// Loopback UDP can drop under a burst; the sender's count is exact.
	if res.Requests < 450 || res.Errors != 0 || got.Load() < res.Requests*9/10 {
		t.Errorf("fire mode: %s, server saw %d", res, got.Load())
	}

	// Nobody listening: request/reply ends each request with an error
	// (refused from the ICMP port unreachable, or a timeout), not a hang.
	dead := closedUDP(t)
	res, err = Run(context.Background(), Config{URL: dead, Concurrency: 2, MaxRequests: 10, Duration: 10 * time.Second, Timeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if res.Errors != 10 {
		t.Errorf("dead UDP port: %s, want 10 errors", res)
	}
}

func closedUDP(t *testing.T) string {
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := pc.LocalAddr().String()
	pc.Close()
	return "udp://" + addr
}
