package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/perfdoctor/perfdoctor/collect/otlpfile"
	"github.com/perfdoctor/perfdoctor/collect/pyroscope"
	"github.com/perfdoctor/perfdoctor/collect/store"
	"github.com/perfdoctor/perfdoctor/evidence"
)

// storeFlags select a profile store (a Pyroscope server, OTLP profiles
// files) and what to read from it, shared by
// diagnose, diff and fleet.
type storeFlags struct {
	pyroscope, tenant           string
	serviceLabel, instanceLabel string
	service, instance           string
	from, to                    string
	otlp                        []string
	flags                       *pflag.FlagSet
}

func (sf *storeFlags) add(f *pflag.FlagSet, withInstance bool) {
	sf.flags = f
	f.StringArrayVar(&sf.otlp, "otlp", nil, "read OTLP profiles from this file, as the OpenTelemetry Collector's file exporter writes it (json or proto, zstd or not; repeat for more files)")
	f.StringVar(&sf.pyroscope, "pyroscope", "", "read profiles from this Pyroscope server (http://host:4040) instead of a bundle; userinfo is sent as basic auth")
	f.StringVar(&sf.tenant, "tenant", "", "Pyroscope tenant (X-Scope-OrgID), for multi-tenant servers")
	f.StringVar(&sf.serviceLabel, "service-label", pyroscope.DefaultServiceLabel, "store label naming the service")
	f.StringVar(&sf.instanceLabel, "instance-label", pyroscope.DefaultInstanceLabel, "store label naming the instance")
	f.StringVar(&sf.service, "service", "", "the service to read from the store")
	if withInstance {
		f.StringVar(&sf.instance, "instance", "", "one instance of --service (default: all of them, merged)")
	}
	f.StringVar(&sf.from, "from", "1h", "start of the store's time range: RFC 3339, or a duration before now (--otlp: default the files' whole span)")
	f.StringVar(&sf.to, "to", "now", "end of the store's time range: RFC 3339, or a duration before now")
}

// used reports whether a store was named.
func (sf *storeFlags) used() bool { return sf.pyroscope != "" || len(sf.otlp) > 0 }

func (sf *storeFlags) reader() (store.Reader, error) {
	if sf.pyroscope != "" && len(sf.otlp) > 0 {
		return nil, usageError{fmt.Errorf("give --pyroscope or --otlp, not both")}
	}
	if len(sf.otlp) > 0 {
		return otlpfile.Open(sf.otlp...)
	}
	c, err := pyroscope.New(sf.pyroscope, nil)
	if err != nil {
		return nil, usageError{fmt.Errorf("--pyroscope: %w", err)}
	}
	c.Tenant, c.ServiceLabel, c.InstanceLabel = sf.tenant, sf.serviceLabel, sf.instanceLabel
	return c, nil
}

// open is the store and the time range to read from it.
func (sf *storeFlags) open() (store.Reader, store.Range, error) {
	rd, err := sf.reader()
	if err != nil {
		return nil, store.Range{}, err
	}
	r, err := sf.timeRange(rd)
	return rd, r, err
}

// timeRange is --from..--to; for files with neither given, their span.
func (sf *storeFlags) timeRange(rd store.Reader) (store.Range, error) {
	if f, ok := rd.(*otlpfile.Files); ok && !sf.flags.Changed("from") && !sf.flags.Changed("to") {
		return f.Span(), nil
	}
	r, err := store.ParseRange(sf.from, sf.to, time.Now())
	if err != nil {
		return store.Range{}, usageError{err}
	}
	return r, nil
}

// parseSpan reads FROM..TO (diff's two ranges of one store).
func parseSpan(s string, now time.Time) (store.Range, error) {
	from, to, ok := strings.Cut(s, "..")
	if !ok {
		return store.Range{}, usageError{fmt.Errorf("%q: with a store, give time ranges as FROM..TO (2h..1h, or RFC 3339 times)", s)}
	}
	r, err := store.ParseRange(from, to, now)
	if err != nil {
		return store.Range{}, usageError{fmt.Errorf("%q: %w", s, err)}
	}
	return r, nil
}

// storeEvidence reads one selection of a store as evidence: its profiles
// over r, merged by the store. The rest (runtime statistics, heap, trace)
// the store does not hold, so the rules needing it are not checked.
func storeEvidence(ctx context.Context, rd store.Reader, r store.Range, s store.Series) (*evidence.Evidence, error) {
	if s.Service == "" {
		return nil, usageError{fmt.Errorf("a store needs --service NAME")}
	}
	ps, err := rd.Profiles(ctx, r, s)
	if err != nil {
		return nil, err
	}
	name := rd.Describe() + " " + s.Service
	if s.Instance != "" {
		name += "/" + s.Instance
	}
	b := evidence.NewBuilder(name + " " + r.From.UTC().Format(time.RFC3339) + ".." + r.To.UTC().Format(time.RFC3339))
	for _, k := range store.Kinds {
		b.Profile(evidence.Kind(k), ps[k])
	}
	return b.Evidence(), nil
}
