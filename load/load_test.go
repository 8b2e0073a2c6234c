package load

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestRunCountsAndKeepAlive(t *testing.T) {
	var hits, conns atomic.Int64
	var badBody atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		b, _ := io.ReadAll(r.Body)
		if r.Method != http.MethodPost || string(b) != "ping" || r.Header.Get("X-Test") != "1" {
			badBody.Add(1)
		}
		io.WriteString(w, strings.Repeat("x", 1000))
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()

	res, err := Run(context.Background(), Config{
		URL: srv.URL, Method: http.MethodPost, Body: []byte("ping"),
		Header:      http.Header{"X-Test": {"1"}},
		Concurrency: 8, Duration: 10 * time.Second, MaxRequests: 2000,
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Requests != 2000 || hits.Load() != 2000 || res.Errors != 0 {
		t.Fatalf("requests=%d hits=%d errors=%d, want 2000/2000/0", res.Requests, hits.Load(), res.Errors)
	}
	if badBody.Load() != 0 {
		t.Errorf("%d requests arrived without method/body/header", badBody.Load())
	}
	// A worker can occasionally dial while its previous connection is on
	// its way back to the idle pool, so allow some slack over 8.
	if n := conns.Load(); n > 16 {
		t.Errorf("%d connections for 8 workers and 2000 requests: keep-alive not effective", n)
	}
	if res.Throughput <= 0 || res.Latency.P50 <= 0 || res.Latency.Max < res.Latency.P99 || res.Interrupted {
		t.Errorf("implausible result: %+v", res)
	}
	t.Log(res)
}

func TestRunStatusErrors(t *testing.T) {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1)%2 == 0 {
			http.Error(w, "boom", http.StatusInternalServerError)
		}
	}))
	defer srv.Close()
	res, err := Run(context.Background(), Config{URL: srv.URL, Concurrency: 2, MaxRequests: 100})
	if err != nil {
		t.Fatal(err)
	}
	if res.Requests != 100 || res.Errors != 50 || res.ErrorsByKind["http_500"] != 50 {
		t.Fatalf("got %s, want 100 req, 50 http_500", res)
	}
	if got, want := res.Throughput, 50/res.Duration.Seconds(); got < want*0.99 || got > want*1.01 {
		t.Errorf("throughput %.1f, want successes/s %.1f", got, want)
	}
}

func TestRunRefused(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there any more
	res, err := Run(context.Background(), Config{URL: "http://" + addr + "/", Concurrency: 2, Duration: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if res.Requests == 0 || res.Errors != res.Requests || res.ErrorsByKind[KindRefused] != res.Requests {
		t.Fatalf("got %s, want all refused", res)
	}
	if res.Throughput != 0 || res.Latency.P50 != 0 {
		t.Errorf("failures leaked into throughput/latency: %+v", res)
	}
}

func TestRunTimeout(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-time.After(2 * time.Second):
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	res, err := Run(context.Background(), Config{URL: srv.URL, Concurrency: 2, MaxRequests: 4, Timeout: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if res.ErrorsByKind[KindTimeout] != 4 {
		t.Fatalf("got %s, want 4 timeouts", res)
	}
}

func TestRunDurationBound(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer srv.Close()
	start := time.Now()
	res, err := Run(context.Background(), Config{URL: srv.URL, Concurrency: 4, Duration: 200 * time.Millisecond, MaxRequests: 1 << 40})
	if err != nil {
		t.Fatal(err)
	}
	if el := time.Since(start); el > 2*time.Second || res.Requests == 0 || res.Errors != 0 || res.Interrupted {
		t.Fatalf("took %s: %s", el, res)
	}
}

func TestRunCancel(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(5 * time.Millisecond)
	}))
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(200*time.Millisecond, cancel)
	start := time.Now()
	res, err := Run(ctx, Config{URL: srv.URL, Concurrency: 4, Duration: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if el := time.Since(start); el > 2*time.Second {
		t.Fatalf("cancel took %s", el)
	}
	// In-flight requests cut off by the cancel are neither requests nor errors.
	if !res.Interrupted || res.Requests == 0 || res.Errors != 0 {
		t.Fatalf("got %s, want interrupted, some requests, no errors", res)
	}
}

func TestValidate(t *testing.T) {
	ok := Config{URL: "http://127.0.0.1:1/", Concurrency: 1, Duration: time.Second}
	for _, tc := range []struct {
		name string
		mod  func(*Config)
		want string // substring of the error; "" = valid
	}{
		{"ok", func(*Config) {}, ""},
		{"requests only", func(c *Config) { c.Duration = 0; c.MaxRequests = 10 }, ""},
		{"long with requests", func(c *Config) { c.Duration = 2 * time.Hour; c.MaxRequests = 10 }, ""},
		{"zero concurrency", func(c *Config) { c.Concurrency = 0 }, "concurrency"},
		{"huge concurrency", func(c *Config) { c.Concurrency = 10001 }, "concurrency"},
		{"no bound", func(c *Config) { c.Duration = 0 }, "duration"},
		{"too long", func(c *Config) { c.Duration = 2 * time.Hour }, "exceeds"},
		{"negative duration", func(c *Config) { c.Duration = -1 }, "negative"},
		{"negative requests", func(c *Config) { c.MaxRequests = -1 }, "negative"},
		{"negative timeout", func(c *Config) { c.Timeout = -1 }, "negative"},
		{"scheme", func(c *Config) { c.URL = "ftp://x/" }, "scheme"},
		{"no host", func(c *Config) { c.URL = "http:///x" }, "no host"},
		{"unparsable", func(c *Config) { c.URL = "http://[::1" }, "bad URL"},
	} {
		c := ok
		tc.mod(&c)
		_, _, err := c.validate()
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: unexpected error %v", tc.name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: error %v, want it to mention %q", tc.name, err, tc.want)
		}
		if tc.want != "" {
			if _, err := Run(context.Background(), c); err == nil {
				t.Errorf("%s: Run accepted an invalid config", tc.name)
			}
		}
	}
}

func TestResultJSON(t *testing.T) {
	r := Result{URL: "http://x/", Concurrency: 2, Duration: 1500 * time.Millisecond, Requests: 10, Errors: 1,
		ErrorsByKind: map[string]int64{"http_500": 1}, Throughput: 6,
		Latency: Percentiles{P50: 1500 * time.Microsecond, P90: 2 * time.Millisecond, P99: 3 * time.Millisecond,
			P999: 4 * time.Millisecond, Max: 5 * time.Millisecond, Mean: 1600 * time.Microsecond}}
	b, err := json.Marshal(&r)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"p50_ms":1.5`, `"p999_ms":4`, `"duration_ms":1500`, `"throughput_rps":6`, `"http_500":1`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("JSON %s lacks %s", b, want)
		}
	}
	var back Result
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if back.Latency != r.Latency || back.Duration != r.Duration || back.Requests != r.Requests {
		t.Errorf("round trip: got %+v, want %+v", back, r)
	}
	if s := r.String(); !strings.Contains(s, "http_500=1") || !strings.Contains(s, "p99=3ms") {
		t.Errorf("String() = %q", s)
	}
}
