package fleet

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"sync"
	"time"

	"github.com/perfdoctor/perfdoctor/bundle"
	"github.com/perfdoctor/perfdoctor/collect"
	"github.com/perfdoctor/perfdoctor/evidence"
)

// Defaults of Plan.
const (
	DefaultHottest     = 3
	DefaultSample      = 2
	DefaultConcurrency = 8
	DefaultDuration    = 10 * time.Second
	DefaultBudget      = 10 * time.Minute
)

// Plan bounds the collection.
type Plan struct {
	// Hottest is how many of each service's instances to collect, hottest
	// by Prometheus' CPU first (DefaultHottest).
	Hottest int
	// Sample is how many more to draw at random from the rest, so the
	// diagnosis does not only see the hot tail (DefaultSample; 0 none).
	Sample int
	// Seed makes the sample reproducible; 0 draws a new one per run.
	Seed uint64
	// Concurrency bounds the collections running at once, across services.
	Concurrency int
	// Duration is each instance's CPU profile window (DefaultDuration).
	Duration time.Duration
	// TargetTimeout bounds one instance's whole collection; 0 means
	// Duration + 30 s.
	TargetTimeout time.Duration
	// Budget bounds the whole collection: instances not started by then are
	// recorded as skipped, and those running are cut at the deadline.
	Budget time.Duration
	// OutDir receives one bundle per instance: OutDir/SERVICE/INSTANCE.
	OutDir string
	// Token is sent to instances that require one (agents).
	Token string
	// Logger receives progress; nil discards it.
	Logger *slog.Logger
	// Collect does one instance; nil means collect.Collect. The scale
	// simulation counts through it.
	Collect func(context.Context, collect.Options) (*bundle.Manifest, error)
}

// Selection reasons and collection states.
const (
	PickedHottest = "hottest"
	PickedSample  = "sample"

	StatusOK        = "ok"      // bundle complete
	StatusPartial   = "partial" // bundle written, some items failed
	StatusFailed    = "failed"  // no usable bundle
	StatusSkipped   = "skipped" // not attempted (budget, down, no endpoint)
	StatusNotPicked = "not-picked"
)

// Collected is what happened to one instance.
type Collected struct {
	*Instance
	Picked string // hottest or sample
	Status string
	Error  string
	Bundle string
	// Load, when set, reads the instance's evidence (from a store) instead
	// of Bundle, which then holds the same profiles on disk if kept. It is
	// called when the instance is diagnosed, so that only one instance's
	// evidence is held at a time.
	Load func(context.Context) (*evidence.Evidence, error)
	Took time.Duration
	dir  string // where its bundle goes
}

// Pick chooses which instances of s to collect: the Hottest first (by CPU;
// instances without CPU come after those with it), then Sample drawn at
// random from the rest. Instances Prometheus reports down, or without a
// pprof endpoint, are not picked but recorded.
func Pick(s *Service, hottest, sample int, rng *rand.Rand) []*Collected {
	out := make([]*Collected, 0, len(s.Instances))
	var rest []*Collected
	for _, in := range s.Instances {
		c := &Collected{Instance: in, Status: StatusNotPicked}
		out = append(out, c)
		switch {
		case in.pprofRaw == "":
			c.Status, c.Error = StatusSkipped, "no pprof endpoint: "+in.LastErr
		case in.Health == "down":
			c.Status, c.Error = StatusSkipped, "Prometheus reports it down: "+in.LastErr
		case hottest > 0:
			c.Picked = PickedHottest
			hottest--
		default:
			rest = append(rest, c)
		}
	}
	rng.Shuffle(len(rest), func(i, j int) { rest[i], rest[j] = rest[j], rest[i] })
	for _, c := range rest[:min(sample, len(rest))] {
		c.Picked = PickedSample
	}
	return out
}

// withDefaults fills in what the plan leaves zero; the seed too, so that
// the report can give it.
func (p Plan) withDefaults() Plan {
	if p.Concurrency <= 0 {
		p.Concurrency = DefaultConcurrency
	}
	if p.Duration <= 0 {
		p.Duration = DefaultDuration
	}
	if p.TargetTimeout <= 0 {
		p.TargetTimeout = p.Duration + 30*time.Second
	}
	if p.Budget <= 0 {
		p.Budget = DefaultBudget
	}
	if p.Logger == nil {
		p.Logger = slog.New(slog.DiscardHandler)
	}
	if p.Collect == nil {
		p.Collect = collect.Collect
	}
	if p.Seed == 0 {
		p.Seed = rand.Uint64()
	}
	return p
}

// collectAll runs the plan over the fleet and returns, per service, every
// instance with what happened to it. An instance's failure is recorded on
// the instance; the rest goes on.
func (p Plan) collectAll(ctx context.Context, f *Fleet) map[string][]*Collected {
	rng := rand.New(rand.NewPCG(p.Seed, p.Seed>>1|1))
	ctx, cancel := context.WithTimeout(ctx, p.Budget)
	defer cancel()

	result := map[string][]*Collected{}
	var jobs []*Collected
	services := dirNames{}
	for _, s := range f.Services {
		s.dir = filepath.Join(p.OutDir, services.unique(s.Name))
		cs := Pick(s, p.Hottest, p.Sample, rng)
		result[s.Name] = cs
		instances := dirNames{}
		for _, c := range cs {
			c.dir = filepath.Join(s.dir, "instances", instances.unique(c.Name))
			if c.Picked != "" {
				jobs = append(jobs, c)
			}
		}
	}
	// Interleave services so a budget cut leaves every service some instances.
	jobs = interleave(jobs)
	sem := make(chan struct{}, p.Concurrency)
	var wg sync.WaitGroup
	for _, c := range jobs {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			c.Status, c.Error = StatusSkipped, "total time budget of "+p.Budget.String()+" spent before it started"
			continue
		}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			p.collectOne(ctx, c)
		}()
	}
	wg.Wait()
	return result
}

// interleave orders the jobs round-robin across services, keeping each
// service's own order (hottest first).
func interleave(jobs []*Collected) []*Collected {
	var order []string
	per := map[string][]*Collected{}
	for _, c := range jobs {
		if _, ok := per[c.Service]; !ok {
			order = append(order, c.Service)
		}
		per[c.Service] = append(per[c.Service], c)
	}
	out := make([]*Collected, 0, len(jobs))
	for i := 0; len(out) < len(jobs); i++ {
		for _, s := range order {
			if i < len(per[s]) {
				out = append(out, per[s][i])
			}
		}
	}
	return out
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// dirNames makes label values safe and distinct as path elements: "a/b"
// and "a-b" both become a-b, so the second gets a-b-2.
type dirNames map[string]int

func (d dirNames) unique(s string) string {
	n := unsafeName.ReplaceAllString(s, "-")
	if n == "" || n == "." || n == ".." {
		n = "_"
	}
	d[n]++
	if d[n] > 1 {
		n += "-" + strconv.Itoa(d[n])
	}
	return n
}

func (p Plan) collectOne(ctx context.Context, c *Collected) {
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, p.TargetTimeout)
	defer cancel()
	dir := c.dir
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		c.Status, c.Error = StatusFailed, err.Error()
		return
	}
	m, err := p.Collect(ctx, collect.Options{
		Target:   c.pprofRaw,
		Duration: p.Duration,
		OutDir:   dir,
		Token:    p.Token,
		Logger:   p.Logger,
	})
	c.Took = time.Since(start)
	switch {
	case m != nil && err == nil && !m.Partial:
		c.Status = StatusOK
	case m != nil && m.OK("cpu"):
		c.Status = StatusPartial
		if err != nil {
			c.Error = err.Error()
		} else if f := m.Failed(); len(f) > 0 {
			c.Error = fmt.Sprintf("%d items failed, first %s: %s", len(f), f[0].Name, f[0].Error)
		}
	default:
		c.Status = StatusFailed
		if err == nil {
			err = errors.New("no CPU profile collected")
		}
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			err = fmt.Errorf("cut by the per-target timeout or the total budget: %w", err)
		}
		c.Error = err.Error()
	}
	if m != nil {
		c.Bundle = dir
	}
	p.Logger.Debug("collected", "service", c.Service, "instance", c.Name, "status", c.Status, "took", c.Took)
}
