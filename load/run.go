package load

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// Histogram range: 1µs .. 60s at 3 significant figures; the timeline's
// per-second histograms keep 2 figures so an hour stays small.
const (
	histMinUS       = 1
	histMaxUS       = 60_000_000
	histSigFigs     = 3
	timelineSigFigs = 2
	// maxShards bounds the histograms kept: workers beyond it share one.
	maxShards = 64
)

// conn is one worker's connection to the target. do sends one request and
// waits for its answer; kind is "" for success, otherwise the error kind.
// abort unblocks a do in progress from another goroutine, for good.
type conn interface {
	// connect opens the connection ahead of the first request, so the
	// first requests do not measure connection setup; errors are left for
	// do to meet and count.
	connect(ctx context.Context)
	do(ctx context.Context) (kind string)
	abort()
	close()
}

// Run drives load against cfg.URL until Duration elapses, MaxRequests have
// been sent, or ctx is done. A done ctx is not an error: the result covers
// what was measured and has Interrupted set.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	if cfg.Command != "" {
		cfg, err := cfg.validateCommand()
		if err != nil {
			return nil, err
		}
		return runCommand(ctx, cfg)
	}
	cfg, t, err := cfg.validate()
	if err != nil {
		return nil, err
	}
	if t.scheme == "udp" {
		cfg.Method = "" // a datagram has none
	}
	newConn := func() conn { return newUDPConn(cfg, t) }
	var loop func(context.Context, []*worker, *counters)
	if t.scheme != "udp" {
		req := buildRequest(cfg, t)
		newConn = func() conn { return newHTTPConn(cfg, t, req) }
		if cfg.Rate == 0 && eventLoopFor(t) && !goroutinesOnly {
			loop = func(ctx context.Context, ws []*worker, cnt *counters) { runEventLoop(ctx, cfg, t, req, ws, cnt) }
		}
	}
	return run(ctx, cfg, newConn, loop), nil
}

// goroutinesOnly makes tests run the closed loop on the goroutine client.
var goroutinesOnly bool

// counters are shared by the workers: request tickets, and figures for the
// progress line and the open loop's accounting.
type counters struct {
	tickets, sent, done, failed, unfinished atomic.Int64
}

// shard is a set of histograms shared by the workers i with i%shards equal.
type shard struct {
	mu       sync.Mutex
	latency  *hdrhistogram.Histogram
	service  *hdrhistogram.Histogram // open loop only
	requests int64
	errors   int64
	late     int64
	kinds    map[string]int64
}

func newHist() *hdrhistogram.Histogram {
	return hdrhistogram.New(histMinUS, histMaxUS, histSigFigs)
}

func clampUS(d time.Duration) int64 {
	return min(max(d.Microseconds(), histMinUS), histMaxUS)
}

// timeline collects per-second figures; each worker buffers its current
// second and merges it here when the second changes, so the lock is taken
// about once per second per worker.
type timeline struct {
	mu   sync.Mutex
	secs []*timelineSecond
}

type timelineSecond struct {
	ok, errors int64
	hist       *hdrhistogram.Histogram
}

func newTimelineSecond() *timelineSecond {
	return &timelineSecond{hist: hdrhistogram.New(histMinUS, histMaxUS, timelineSigFigs)}
}

func (tl *timeline) merge(sec int, s *timelineSecond) {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	for len(tl.secs) <= sec {
		tl.secs = append(tl.secs, nil)
	}
	if tl.secs[sec] == nil {
		tl.secs[sec] = newTimelineSecond()
	}
	d := tl.secs[sec]
	d.ok += s.ok
	d.errors += s.errors
	d.hist.Merge(s.hist)
}

// worker is one loop's private state.
type worker struct {
	c     conn
	shard *shard
	tl    *timeline
	start time.Time
	sec   int
	cur   *timelineSecond
}

func (w *worker) record(kind string, latency, service time.Duration, done time.Time, late bool) {
	sec := int(done.Sub(w.start) / time.Second)
	if sec != w.sec && (w.cur.ok > 0 || w.cur.errors > 0) {
		w.flush()
	}
	w.sec = sec
	s := w.shard
	s.mu.Lock()
	s.requests++
	if late {
		s.late++
	}
	if kind != "" {
		s.errors++
		s.kinds[kind]++
	} else {
		_ = s.latency.RecordValue(clampUS(latency)) // in range by construction
		if s.service != nil {
			_ = s.service.RecordValue(clampUS(service))
		}
	}
	s.mu.Unlock()
	if kind != "" {
		w.cur.errors++
	} else {
		w.cur.ok++
		_ = w.cur.hist.RecordValue(clampUS(latency))
	}
}

func (w *worker) flush() {
	if w.cur.ok == 0 && w.cur.errors == 0 {
		return
	}
	w.tl.merge(w.sec, w.cur)
	w.cur.ok, w.cur.errors = 0, 0
	w.cur.hist.Reset()
}

// run starts the workers, waits for the end of the run and assembles the
// result. With loop set, one event loop drives every worker's connection
// instead of a goroutine per worker with its own conn.
func run(parent context.Context, cfg Config, newConn func() conn, loop func(context.Context, []*worker, *counters)) *Result {
	open := cfg.Rate > 0
	// stop ends the run; requests still in flight then are cut off and not
	// counted (they measured our cut-off, not the server).
	//
	// The open loop stops sending at Duration but lets the requests in
	// flight finish (up to their timeout): cutting them off would drop
	// exactly the slowest requests, those a stall left waiting.
	runCtx, stop := context.WithCancel(parent)
	defer stop()
	if cfg.Duration > 0 {
		hardStop := cfg.Duration
		if open {
			hardStop += cfg.Timeout
		}
		t := time.AfterFunc(hardStop, stop)
		defer t.Stop()
	}

	nShards := min(cfg.Concurrency, maxShards)
	shards := make([]*shard, nShards)
	for i := range shards {
		shards[i] = &shard{latency: newHist(), kinds: map[string]int64{}}
		if open {
			shards[i].service = newHist()
		}
	}
	tl := &timeline{}
	var conns []conn
	if loop == nil {
		conns = make([]conn, cfg.Concurrency)
		var connecting sync.WaitGroup
		for i := range conns {
			conns[i] = newConn()
			connecting.Go(func() { conns[i].connect(runCtx) })
		}
		connecting.Wait()
	}
	// Unblock every connection when the run ends, so no worker waits out
	// its request timeout.
	aborted := make(chan struct{})
	go func() {
		<-runCtx.Done()
		for _, c := range conns {
			c.abort()
		}
		close(aborted)
	}()

	cpu0 := processCPU()
	start := time.Now()
	var (
		cnt     counters
		wakeLag = newHist() // open loop: how late sleeping workers woke
		wakeMu  sync.Mutex
		wg      sync.WaitGroup
	)
	interval := time.Duration(0)
	if open {
		interval = time.Duration(float64(time.Second) / cfg.Rate)
	}
	workers := make([]*worker, cfg.Concurrency)
	for i := range workers {
		workers[i] = &worker{shard: shards[i%nShards], tl: tl, start: start, cur: newTimelineSecond()}
	}
	if loop != nil {
		wg.Go(func() {
			defer func() {
				for _, w := range workers {
					w.flush()
				}
			}()
			loop(runCtx, workers, &cnt)
		})
	}
	for i, c := range conns {
		w := workers[i]
		w.c = c
		wg.Go(func() {
			defer w.flush()
			var sleep *time.Timer
			for runCtx.Err() == nil {
				n := cnt.tickets.Add(1) - 1
				if cfg.MaxRequests > 0 && n >= cfg.MaxRequests {
					return
				}
				// from is where latency counts from. Closed loop: the
				// send. Open loop: the due time when the request had to
				// wait for a free connection (the target's backlog, which
				// is what coordinated omission hides); the send when the
				// worker was idle and slept until the due time, since how
				// late its timer fired is the generator's lag, not the
				// target's (it goes to the warnings instead).
				var from time.Time
				late := false
				if open {
					due := start.Add(time.Duration(n) * interval)
					if cfg.Duration > 0 && due.Sub(start) >= cfg.Duration {
						return
					}
					from = due
					if wait := time.Until(due); wait > 0 {
						if sleep == nil {
							sleep = time.NewTimer(wait)
						} else {
							sleep.Reset(wait)
						}
						select {
						case <-sleep.C:
						case <-runCtx.Done():
							return
						}
						from = time.Now()
						wakeMu.Lock()
						_ = wakeLag.RecordValue(clampUS(from.Sub(due)))
						wakeMu.Unlock()
					} else {
						late = -wait > LateThreshold
					}
				}
				t0 := time.Now()
				if !open {
					from = t0
				}
				cnt.sent.Add(1)
				kind := w.c.do(runCtx)
				t1 := time.Now()
				if kind != "" && runCtx.Err() != nil {
					cnt.unfinished.Add(1)
					return // cut off by the end of the run
				}
				w.record(kind, t1.Sub(from), t1.Sub(t0), t1, late)
				cnt.done.Add(1)
				if kind != "" {
					cnt.failed.Add(1)
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
					n := cnt.done.Load()
					cfg.Progress.Update("load %s: %s, %d req, %d err, %.0f req/s",
						cfg.URL, el.Round(time.Second), n, cnt.failed.Load(), float64(n)/el.Seconds())
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	stop()
	<-aborted
	for _, c := range conns {
		c.close()
	}
	close(finished)
	cfg.Progress.Clear()

	res := &Result{
		Mode:         modeClosed,
		URL:          cfg.URL,
		Concurrency:  cfg.Concurrency,
		Method:       cfg.Method,
		BodyBytes:    len(cfg.Body),
		Start:        start,
		Duration:     elapsed,
		ErrorsByKind: map[string]int64{},
		Unfinished:   cnt.unfinished.Load(),
		// The run was cut short only if the caller's ctx ended it, not our
		// own timer or the request budget.
		Interrupted: parent.Err() != nil,
	}
	lat, svc := newHist(), newHist()
	for _, s := range shards {
		lat.Merge(s.latency)
		if s.service != nil {
			svc.Merge(s.service)
		}
		res.Requests += s.requests
		res.Errors += s.errors
		res.LateSends += s.late
		for k, v := range s.kinds {
			res.ErrorsByKind[k] += v
		}
	}
	if elapsed > 0 {
		res.Throughput = float64(res.Requests-res.Errors) / elapsed.Seconds()
	}
	res.Latency = percentiles(lat)
	res.Table = table(lat)
	res.Service = res.Latency
	if open {
		res.Mode = modeOpen
		res.Rate = cfg.Rate
		res.Service = percentiles(svc)
		// Every send due before the run ended should have started.
		due := int64(elapsed/interval) + 1
		if cfg.Duration > 0 {
			due = min(due, int64((cfg.Duration+interval-1)/interval))
		}
		if cfg.MaxRequests > 0 {
			due = min(due, cfg.MaxRequests)
		}
		res.Dropped = max(0, due-cnt.sent.Load())
	}
	for i, s := range tl.secs {
		if s == nil {
			res.Timeline = append(res.Timeline, Second{T: i})
			continue
		}
		sec := Second{T: i, OK: s.ok, Errors: s.errors}
		if s.ok > 0 {
			sec.P50 = usDur(s.hist.ValueAtQuantile(50))
			sec.P99 = usDur(s.hist.ValueAtQuantile(99))
			sec.Max = usDur(s.hist.Max())
		}
		res.Timeline = append(res.Timeline, sec)
	}
	res.GeneratorCPU = (processCPU() - cpu0).Seconds() / elapsed.Seconds()
	res.LoadAverage = LoadAverage()
	res.Warnings = generatorWarnings(res.GeneratorCPU, runtime.GOMAXPROCS(0), wakeLag, res.LoadAverage)
	return res
}

func usDur(v int64) time.Duration { return time.Duration(v) * time.Microsecond }

func percentiles(h *hdrhistogram.Histogram) Percentiles {
	if h.TotalCount() == 0 {
		return Percentiles{}
	}
	q := func(p float64) time.Duration { return usDur(h.ValueAtQuantile(p)) }
	return Percentiles{
		P50: q(50), P75: q(75), P90: q(90), P95: q(95), P99: q(99), P999: q(99.9), P9999: q(99.99),
		Max:  usDur(h.Max()),
		Mean: time.Duration(h.Mean() * float64(time.Microsecond)),
	}
}

// tablePercentiles are the rows of the full table: deciles, then halving
// the remaining tail down to 99.999, then the maximum.
var tablePercentiles = []float64{0, 10, 20, 30, 40, 50, 60, 70, 75, 80, 85, 90, 95, 97.5, 99, 99.5, 99.75, 99.9, 99.95, 99.99, 99.999, 100}

func table(h *hdrhistogram.Histogram) []Quantile {
	if h.TotalCount() == 0 {
		return nil
	}
	out := make([]Quantile, 0, len(tablePercentiles))
	for _, p := range tablePercentiles {
		v := h.ValueAtQuantile(p)
		if p == 0 {
			v = h.Min()
		}
		out = append(out, Quantile{Percentile: p, Value: usDur(v)})
	}
	return out
}
