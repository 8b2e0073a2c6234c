// Package load is a small closed-loop HTTP load generator for tests, benchmarks
// and `perfdoctor demo`.
//
// Closed loop: Concurrency workers each send a request, wait for the full
// response and send the next one, so the offered load adapts to the server.
// The request itself is behind the internal driver interface and the loop
// behind runClosed, so an open-loop schedule (fixed arrival rate) or a UDP
// driver can be added without touching the accounting.
package load

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/perfdoctor/perfdoctor/internal/progress"
)

// Limits enforced by Config validation.
const (
	MaxConcurrency = 10000
	MaxDuration    = time.Hour
	DefaultTimeout = 10 * time.Second
)

// Error kinds for transport failures in Result.ErrorsByKind. Non-2xx
// responses are counted under "http_<status>", e.g. "http_500".
const (
	KindTimeout = "timeout"
	KindRefused = "refused"
	KindReset   = "reset"
	KindOther   = "other"
)

// Histogram range: 1µs .. 60s at 3 significant figures.
const (
	histMinUS   = 1
	histMaxUS   = 60_000_000
	histSigFigs = 3
)

// Config describes one load run.
type Config struct {
	URL    string
	Method string // default GET
	Body   []byte
	Header http.Header
	// Concurrency is the number of closed-loop workers (1..10000).
	Concurrency int
	// Duration bounds the run; it must be in (0, 1h] unless MaxRequests is
	// set, in which case 0 means no time bound.
	Duration time.Duration
	// MaxRequests bounds the number of requests sent; 0 = unbounded. The run
	// stops at whichever of Duration and MaxRequests comes first.
	MaxRequests int64
	// Timeout is the per-request timeout; 0 means DefaultTimeout.
	Timeout time.Duration
	// Progress, if non-nil, shows a live status line (silent off-terminal).
	Progress *progress.Line
}

// Percentiles of request latency.
type Percentiles struct {
	P50, P90, P99, P999, Max, Mean time.Duration
}

// Result is what a run measured. Latency covers successful (2xx) requests
// only: failures such as refused connections return in microseconds and
// would hide the server's real latency.
type Result struct {
	URL          string
	Concurrency  int
	Duration     time.Duration // wall time actually spent
	Requests     int64         // completed requests, successful or not
	Errors       int64         // non-2xx responses plus transport errors
	ErrorsByKind map[string]int64
	Throughput   float64 // successful requests per second
	Latency      Percentiles
	// Interrupted is true when the caller's context ended the run early
	// (e.g. Ctrl-C); the figures cover what was measured until then.
	Interrupted bool
}

// String is a one-line summary.
func (r *Result) String() string {
	if r == nil {
		return "<nil>"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s c=%d %s: %d req, %d err, %.1f req/s, p50=%s p90=%s p99=%s p99.9=%s max=%s",
		r.URL, r.Concurrency, r.Duration.Round(time.Millisecond), r.Requests, r.Errors, r.Throughput,
		fmtDur(r.Latency.P50), fmtDur(r.Latency.P90), fmtDur(r.Latency.P99), fmtDur(r.Latency.P999), fmtDur(r.Latency.Max))
	if len(r.ErrorsByKind) > 0 {
		kinds := make([]string, 0, len(r.ErrorsByKind))
		for k := range r.ErrorsByKind {
			kinds = append(kinds, k)
		}
		sort.Strings(kinds)
		b.WriteString(" (")
		for i, k := range kinds {
			if i > 0 {
				b.WriteString(" ")
			}
			fmt.Fprintf(&b, "%s=%d", k, r.ErrorsByKind[k])
		}
		b.WriteString(")")
	}
	if r.Interrupted {
		b.WriteString(" [interrupted]")
	}
	return b.String()
}

func fmtDur(d time.Duration) string {
	switch {
	case d >= time.Second:
		return d.Round(time.Millisecond).String()
	case d >= time.Millisecond:
		return d.Round(10 * time.Microsecond).String()
	default:
		return d.Round(time.Microsecond).String()
	}
}

// ms converts a duration to float milliseconds for JSON.
func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func fromMS(v float64) time.Duration { return time.Duration(v * float64(time.Millisecond)) }

type percentilesJSON struct {
	P50  float64 `json:"p50_ms"`
	P90  float64 `json:"p90_ms"`
	P99  float64 `json:"p99_ms"`
	P999 float64 `json:"p999_ms"`
	Max  float64 `json:"max_ms"`
	Mean float64 `json:"mean_ms"`
}

// MarshalJSON writes durations as float milliseconds (p50_ms, ...).
func (p Percentiles) MarshalJSON() ([]byte, error) {
	return json.Marshal(percentilesJSON{ms(p.P50), ms(p.P90), ms(p.P99), ms(p.P999), ms(p.Max), ms(p.Mean)})
}

// UnmarshalJSON reads the form written by MarshalJSON.
func (p *Percentiles) UnmarshalJSON(b []byte) error {
	var j percentilesJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*p = Percentiles{fromMS(j.P50), fromMS(j.P90), fromMS(j.P99), fromMS(j.P999), fromMS(j.Max), fromMS(j.Mean)}
	return nil
}

type resultJSON struct {
	URL          string           `json:"url"`
	Concurrency  int              `json:"concurrency"`
	Duration     float64          `json:"duration_ms"`
	Requests     int64            `json:"requests"`
	Errors       int64            `json:"errors"`
	ErrorsByKind map[string]int64 `json:"errors_by_kind,omitempty"`
	Throughput   float64          `json:"throughput_rps"`
	Latency      Percentiles      `json:"latency"`
	Interrupted  bool             `json:"interrupted,omitempty"`
}

// MarshalJSON writes Duration as duration_ms and latencies as *_ms fields.
func (r Result) MarshalJSON() ([]byte, error) {
	return json.Marshal(resultJSON{r.URL, r.Concurrency, ms(r.Duration), r.Requests, r.Errors,
		r.ErrorsByKind, r.Throughput, r.Latency, r.Interrupted})
}

// UnmarshalJSON reads the form written by MarshalJSON.
func (r *Result) UnmarshalJSON(b []byte) error {
	var j resultJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*r = Result{j.URL, j.Concurrency, fromMS(j.Duration), j.Requests, j.Errors, j.ErrorsByKind,
		j.Throughput, j.Latency, j.Interrupted}
	return nil
}

// validate checks cfg and fills defaults into a copy.
func (cfg Config) validate() (Config, *url.URL, error) {
	if cfg.Concurrency < 1 || cfg.Concurrency > MaxConcurrency {
		return cfg, nil, fmt.Errorf("load: concurrency %d out of range 1..%d", cfg.Concurrency, MaxConcurrency)
	}
	if cfg.MaxRequests < 0 {
		return cfg, nil, fmt.Errorf("load: max requests %d is negative", cfg.MaxRequests)
	}
	if cfg.Duration < 0 {
		return cfg, nil, fmt.Errorf("load: duration %s is negative", cfg.Duration)
	}
	if cfg.MaxRequests == 0 {
		if cfg.Duration == 0 {
			return cfg, nil, errors.New("load: duration must be > 0 when max requests is not set")
		}
		if cfg.Duration > MaxDuration {
			return cfg, nil, fmt.Errorf("load: duration %s exceeds %s (set max requests for longer runs)", cfg.Duration, MaxDuration)
		}
	}
	if cfg.Timeout < 0 {
		return cfg, nil, fmt.Errorf("load: timeout %s is negative", cfg.Timeout)
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.Method == "" {
		cfg.Method = http.MethodGet
	}
	u, err := url.Parse(cfg.URL)
	if err != nil {
		return cfg, nil, fmt.Errorf("load: bad URL: %w", err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return cfg, nil, fmt.Errorf("load: URL %q: scheme must be http or https", cfg.URL)
	}
	if u.Host == "" {
		return cfg, nil, fmt.Errorf("load: URL %q has no host", cfg.URL)
	}
	return cfg, u, nil
}

// driver performs one request and reports its outcome: kind is "" for
// success, otherwise the error kind. It must be safe for concurrent use.
type driver interface {
	do(ctx context.Context) (kind string)
	close()
}

// Run drives load against cfg.URL until Duration elapses, MaxRequests have
// been sent, or ctx is done. A done ctx is not an error: the result covers
// what was measured and has Interrupted set.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	cfg, u, err := cfg.validate()
	if err != nil {
		return nil, err
	}
	d := newHTTPDriver(cfg, u)
	defer d.close()

	res := runClosed(ctx, cfg, d)
	res.URL = cfg.URL
	return res, nil
}

// recorder holds one worker's measurements; each worker owns one so the hot
// path takes no lock. They are merged when the run ends.
type recorder struct {
	hist     *hdrhistogram.Histogram
	requests int64
	errors   int64
	kinds    map[string]int64
}

func newRecorder() *recorder {
	return &recorder{hist: hdrhistogram.New(histMinUS, histMaxUS, histSigFigs), kinds: map[string]int64{}}
}

func (r *recorder) record(kind string, lat time.Duration) {
	r.requests++
	if kind != "" {
		r.errors++
		r.kinds[kind]++
		return
	}
	us := lat.Microseconds()
	if us < histMinUS {
		us = histMinUS
	} else if us > histMaxUS {
		us = histMaxUS
	}
	_ = r.hist.RecordValue(us) // in range by construction
}

// runClosed runs the closed loop and merges the workers' recorders.
func runClosed(parent context.Context, cfg Config, d driver) *Result {
	// stop ends the run; requests still in flight then are cancelled and not
	// counted (they measured our cut-off, not the server).
	runCtx, stop := context.WithCancel(parent)
	defer stop()
	if cfg.Duration > 0 {
		t := time.AfterFunc(cfg.Duration, stop)
		defer t.Stop()
	}

	// issued hands out request tickets when MaxRequests is set; done and
	// failed feed the progress line. Atomics, not locks.
	var issued, done, failed atomic.Int64
	recs := make([]*recorder, cfg.Concurrency)
	var wg sync.WaitGroup
	start := time.Now()
	for i := range recs {
		rec := newRecorder()
		recs[i] = rec
		wg.Go(func() {
			for runCtx.Err() == nil {
				if cfg.MaxRequests > 0 && issued.Add(1) > cfg.MaxRequests {
					return
				}
				t0 := time.Now()
				kind := d.do(runCtx)
				lat := time.Since(t0)
				if kind != "" && runCtx.Err() != nil {
					return // cut off by the end of the run
				}
				rec.record(kind, lat)
				done.Add(1)
				if kind != "" {
					failed.Add(1)
				}
			}
		})
	}

	finished := make(chan struct{})
	if cfg.Progress.Active() {
		go func() {
			tick := time.NewTicker(250 * time.Millisecond)
			defer tick.Stop()
			for {
				select {
				case <-finished:
					return
				case <-tick.C:
					el := time.Since(start)
					n := done.Load()
					cfg.Progress.Update("load %s: %s, %d req, %d err, %.0f req/s",
						cfg.URL, el.Round(time.Second), n, failed.Load(), float64(n)/el.Seconds())
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	close(finished)
	cfg.Progress.Clear()

	res := &Result{
		Concurrency:  cfg.Concurrency,
		Duration:     elapsed,
		ErrorsByKind: map[string]int64{},
		// The run was cut short only if the caller's ctx ended it, not our
		// own timer or the request budget.
		Interrupted: parent.Err() != nil,
	}
	h := hdrhistogram.New(histMinUS, histMaxUS, histSigFigs)
	for _, r := range recs {
		h.Merge(r.hist)
		res.Requests += r.requests
		res.Errors += r.errors
		for k, v := range r.kinds {
			res.ErrorsByKind[k] += v
		}
	}
	if elapsed > 0 {
		res.Throughput = float64(res.Requests-res.Errors) / elapsed.Seconds()
	}
	if h.TotalCount() > 0 {
		us := func(v int64) time.Duration { return time.Duration(v) * time.Microsecond }
		res.Latency = Percentiles{
			P50:  us(h.ValueAtQuantile(50)),
			P90:  us(h.ValueAtQuantile(90)),
			P99:  us(h.ValueAtQuantile(99)),
			P999: us(h.ValueAtQuantile(99.9)),
			Max:  us(h.Max()),
			Mean: time.Duration(h.Mean() * float64(time.Microsecond)),
		}
	}
	return res
}

// httpDriver sends one HTTP/1.1 request per do call over a dedicated,
// keep-alive transport.
type httpDriver struct {
	client *http.Client
	tr     *http.Transport
	tmpl   *http.Request // shared, read-only; copied per request
	body   []byte
}

func newHTTPDriver(cfg Config, u *url.URL) *httpDriver {
	dialer := &net.Dialer{Timeout: cfg.Timeout, KeepAlive: 30 * time.Second}
	tr := &http.Transport{
		// A dedicated transport so the run neither shares nor pollutes
		// http.DefaultTransport; no proxy so loopback traffic stays local.
		Proxy:       nil,
		DialContext: dialer.DialContext,
		// Keep one idle connection per worker; the default (2) would make
		// most workers dial and close per request: connection churn in the
		// load generator itself.
		MaxIdleConns:        cfg.Concurrency,
		MaxIdleConnsPerHost: cfg.Concurrency,
		IdleConnTimeout:     90 * time.Second,
		TLSHandshakeTimeout: cfg.Timeout,
		DisableCompression:  true, // measure the server's bytes as sent
	}
	// HTTP/1.1 only, also over TLS: one request per connection at a time
	// is what the closed loop's concurrency means.
	tr.Protocols = new(http.Protocols)
	tr.Protocols.SetHTTP1(true)
	client := &http.Client{
		Transport: tr,
		Timeout:   cfg.Timeout,
		// Redirects are responses like any other: count 3xx, don't follow.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	tmpl := &http.Request{
		Method:     cfg.Method,
		URL:        u,
		Proto:      "HTTP/1.1",
		ProtoMajor: 1,
		ProtoMinor: 1,
		Header:     cfg.Header.Clone(),
		Host:       u.Host,
	}
	if tmpl.Header == nil {
		tmpl.Header = http.Header{}
	}
	return &httpDriver{client: client, tr: tr, tmpl: tmpl, body: cfg.Body}
}

func (d *httpDriver) do(ctx context.Context) string {
	req := d.tmpl.WithContext(ctx) // shallow copy; the header map is only read
	if len(d.body) > 0 {
		body := d.body
		req.ContentLength = int64(len(body))
		req.Body = io.NopCloser(bytes.NewReader(body))
		req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	}
	resp, err := d.client.Do(req)
	if err != nil {
		return classify(err)
	}
	// Drain before close so the connection goes back to the idle pool.
	_, err = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Sprintf("http_%d", resp.StatusCode)
	}
	if err != nil {
		return classify(err)
	}
	return ""
}

func (d *httpDriver) close() { d.tr.CloseIdleConnections() }

// classify maps a transport error to an error kind.
func classify(err error) string {
	var ne net.Error
	switch {
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, os.ErrDeadlineExceeded),
		errors.As(err, &ne) && ne.Timeout():
		return KindTimeout
	case errors.Is(err, syscall.ECONNREFUSED):
		return KindRefused
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE), errors.Is(err, syscall.ECONNABORTED),
		errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		// The peer closed the connection under us.
		return KindReset
	default:
		return KindOther
	}
}
