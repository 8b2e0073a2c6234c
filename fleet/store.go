package fleet

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/google/pprof/profile"

	"github.com/perfdoctor/perfdoctor/bundle"
	"github.com/perfdoctor/perfdoctor/collect/store"
	"github.com/perfdoctor/perfdoctor/evidence"
	"github.com/perfdoctor/perfdoctor/rules"
)

// HealthStored is the health of an instance read from a store: it held
// profiles for the range; whether it is up now is not the store's to say.
const HealthStored = "stored"

// storeMerge are the kinds merged across a service's instances read from a
// store: all of them, since a store holds only windowed profiles, which add
// up across processes.
var storeMerge = []evidence.Kind{evidence.CPU, evidence.Allocs, evidence.Mutex, evidence.Block}

// StoreOptions is a fleet run over a profile store.
type StoreOptions struct {
	Reader store.Reader
	Range  store.Range
	// Service, if set, diagnoses that service alone.
	Service string
	// GroupBy names the label that made services, for the report.
	GroupBy string
	// Concurrency bounds the services read and diagnosed at once
	// (DefaultConcurrency).
	Concurrency int
	// OutDir receives each service's reports and merged CPU profile, as a
	// scraping run does, and with KeepInstances each instance's profiles as
	// a bundle (about 100 KiB an instance: the store keeps them anyway).
	OutDir        string
	KeepInstances bool
	Tool          string
	Logger        *slog.Logger
}

// DiagnoseStore reads every service and instance the store holds profiles
// for over the range and diagnoses them as Diagnose does a scraped fleet:
// each instance alone, each service as the merge of its instances, every
// finding ranked by the cores it gives back. An instance's cores are its
// CPU profile's CPU time over the range. It fails only when the store
// cannot be listed or holds nothing in the range.
func DiagnoseStore(ctx context.Context, opt StoreOptions) (*Report, error) {
	start := time.Now()
	if opt.OutDir == "" {
		return nil, errors.New("fleet: no output directory")
	}
	log := opt.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	series, err := opt.Reader.Series(ctx, opt.Range, opt.Service)
	if err != nil {
		return nil, err
	}
	if len(series) == 0 {
		what := "any service"
		if opt.Service != "" {
			what = "service " + opt.Service
		}
		return nil, fmt.Errorf("%s holds no profiles of %s from %s to %s", opt.Reader.Describe(), what,
			opt.Range.From.UTC().Format(time.RFC3339), opt.Range.To.UTC().Format(time.RFC3339))
	}
	if err := os.MkdirAll(opt.OutDir, 0o755); err != nil {
		return nil, fmt.Errorf("fleet: %w", err)
	}
	var services [][]store.Series // series is sorted by service
	for i, s := range series {
		if i == 0 || s.Service != series[i-1].Service {
			services = append(services, nil)
		}
		services[len(services)-1] = append(services[len(services)-1], s)
	}
	from, to := opt.Range.From, opt.Range.To
	r := &Report{
		SchemaVersion: SchemaVersion, Tool: opt.Tool, Store: opt.Reader.Describe(), From: &from, To: &to,
		GroupBy: opt.GroupBy, Start: start, Dir: opt.OutDir, Savings: []Saving{},
		Services: make([]*ServiceDiag, len(services)),
		Plan:     PlanSummary{Concurrency: max(opt.Concurrency, 1), DurationSeconds: opt.Range.Duration().Seconds()},
	}
	if opt.Concurrency <= 0 {
		r.Plan.Concurrency = DefaultConcurrency
	}
	names := dirNames{}
	dirs := make([]string, len(services))
	for i, ss := range services {
		dirs[i] = filepath.Join(opt.OutDir, names.unique(ss[0].Service))
	}
	next := make(chan int)
	var wg sync.WaitGroup
	for range r.Plan.Concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				r.Services[i] = diagnoseStoredService(ctx, opt, services[i], dirs[i], log)
			}
		}()
	}
	for i := range services {
		next <- i
	}
	close(next)
	wg.Wait()
	for _, sd := range r.Services {
		for _, in := range sd.Instances {
			if in.Status != StatusOK {
				r.Partial = true
			}
		}
	}
	r.Savings = rankSavings(r.Services)
	r.End = time.Now()
	return r, nil
}

// diagnoseStoredService reads each instance's profiles as it diagnoses it
// (keeping them as a bundle if asked) and diagnoses the service. Every kind
// a store holds is merged, so the representative (the first instance read)
// lends the merged evidence nothing but its name.
func diagnoseStoredService(ctx context.Context, opt StoreOptions, ss []store.Series, dir string, log *slog.Logger) *ServiceDiag {
	name := ss[0].Service
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return &ServiceDiag{Name: name, Error: err.Error(), Findings: []rules.Finding{}, Instances: []InstanceReport{}}
	}
	names := dirNames{}
	cs := make([]*Collected, 0, len(ss))
	for _, s := range ss {
		inst := s.Instance
		if inst == "" {
			inst = name // the store names no instances: the service is one
		}
		c := &Collected{Instance: &Instance{Service: name, Name: inst, Health: HealthStored, CPU: -1}, Status: StatusOK}
		if opt.KeepInstances {
			c.Bundle = filepath.Join(dir, "instances", names.unique(inst))
		}
		c.Load = func(ctx context.Context) (*evidence.Evidence, error) {
			began := time.Now()
			profiles, err := opt.Reader.Profiles(ctx, opt.Range, s)
			c.Took = time.Since(began)
			if err != nil {
				log.Warn("fleet: reading the store", "service", name, "instance", inst, "err", err)
				return nil, err
			}
			selection := opt.Reader.Describe() + " " + name
			if s.Instance != "" {
				selection += "/" + s.Instance
			}
			b := evidence.NewBuilder(selection)
			for _, k := range store.Kinds {
				b.Profile(evidence.Kind(k), profiles[k])
			}
			if c.Bundle != "" {
				if err := writeProfiles(c.Bundle, profiles); err != nil {
					return nil, err
				}
			}
			return b.Evidence(), nil
		}
		cs = append(cs, c)
	}
	sd := diagnoseService(ctx, name, dir, cs, opt.OutDir, opt.Tool, storeMerge)
	log.Info("fleet: diagnosed", "service", name, "instances", len(cs))
	return sd
}

// writeProfiles keeps a store's profiles of one instance as a bundle that
// perfdoctor diagnose reads.
func writeProfiles(dir string, profiles map[store.Kind]*profile.Profile) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, k := range store.Kinds {
		if p := profiles[k]; p != nil {
			if _, err := bundle.WriteProfile(filepath.Join(dir, string(k)+".pb.gz"), p); err != nil {
				return err
			}
		}
	}
	return nil
}
