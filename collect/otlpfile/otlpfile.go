// Package otlpfile reads OTLP profiles files, as the OpenTelemetry
// Collector's file exporter writes them, as a store: services are the
// resources' service.name, instances their service.instance.id (else
// host.name), and a selection's profiles of each kind are merged over the
// time range. It is a store.Reader.
package otlpfile

import (
	"context"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/google/pprof/profile"

	"github.com/perfdoctor/perfdoctor/collect/store"
	"github.com/perfdoctor/perfdoctor/formats/otlpprofile"
)

// Resource attributes naming services and instances, as the OpenTelemetry
// semantic conventions spell them.
const (
	ServiceAttr  = "service.name"
	InstanceAttr = "service.instance.id"
	HostAttr     = "host.name"
)

// Files is the profiles of one or more files, read whole.
type Files struct {
	paths    []string
	profiles []otlpprofile.Profile
	// ServiceAttr and InstanceAttr name the resource attributes that make
	// services and instances; an instance falls back to host.name.
	ServiceAttr, InstanceAttr string
}

// Open reads the files.
func Open(paths ...string) (*Files, error) {
	f := &Files{paths: paths, ServiceAttr: ServiceAttr, InstanceAttr: InstanceAttr}
	for _, p := range paths {
		fh, err := os.Open(p)
		if err != nil {
			return nil, err
		}
		ps, err := otlpprofile.Read(fh)
		fh.Close()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		f.profiles = append(f.profiles, ps...)
	}
	if len(f.profiles) == 0 {
		return nil, fmt.Errorf("%s: %w", strings.Join(paths, ", "), store.ErrNoProfiles)
	}
	return f, nil
}

// Describe names the files.
func (f *Files) Describe() string { return "otlp " + strings.Join(f.paths, ",") }

// Span is the time the files' profiles cover: the default range.
func (f *Files) Span() store.Range {
	var r store.Range
	for _, p := range f.profiles {
		end := p.Start.Add(p.Duration)
		if r.From.IsZero() || p.Start.Before(r.From) {
			r.From = p.Start
		}
		if end.After(r.To) {
			r.To = end
		}
	}
	if !r.To.After(r.From) {
		r.To = r.From.Add(time.Second)
	}
	return r
}

func (f *Files) seriesOf(p otlpprofile.Profile) store.Series {
	inst := p.Resource[f.InstanceAttr]
	if inst == "" {
		inst = p.Resource[HostAttr]
	}
	return store.Series{Service: p.Resource[f.ServiceAttr], Instance: inst}
}

func overlaps(p otlpprofile.Profile, r store.Range) bool {
	end := p.Start.Add(max(p.Duration, 1))
	return p.Start.Before(r.To) && end.After(r.From)
}

// Series lists the services and instances with profiles in r.
func (f *Files) Series(_ context.Context, r store.Range, service string) ([]store.Series, error) {
	seen := map[store.Series]bool{}
	var out []store.Series
	for _, p := range f.profiles {
		s := f.seriesOf(p)
		if s.Service == "" {
			s.Service = "unknown_service" // the semantic conventions' default
		}
		if seen[s] || !overlaps(p, r) || (service != "" && s.Service != service) || p.Kind == "" {
			continue
		}
		seen[s] = true
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b store.Series) int {
		if c := strings.Compare(a.Service, b.Service); c != 0 {
			return c
		}
		return strings.Compare(a.Instance, b.Instance)
	})
	return out, nil
}

// defaults are each kind's default sample type, as Go's profiles have it.
var defaults = map[store.Kind]string{store.CPU: "cpu", store.Allocs: "alloc_space", store.Mutex: "delay", store.Block: "delay"}

// Profiles merges s's profiles of each kind over r.
func (f *Files) Profiles(_ context.Context, r store.Range, s store.Series) (map[store.Kind]*profile.Profile, error) {
	byType := map[store.Kind]map[string][]*profile.Profile{}
	for _, p := range f.profiles {
		ps := f.seriesOf(p)
		if ps.Service == "" {
			ps.Service = "unknown_service"
		}
		if p.Kind == "" || !overlaps(p, r) || ps.Service != s.Service || (s.Instance != "" && ps.Instance != s.Instance) {
			continue
		}
		k := store.Kind(p.Kind)
		if byType[k] == nil {
			byType[k] = map[string][]*profile.Profile{}
		}
		t := p.Pprof.SampleType[0].Type
		byType[k][t] = append(byType[k][t], p.Pprof)
	}
	// Go's CPU profile is two OTLP profiles, samples and cpu: the cpu one
	// says it all. A profiler's samples alone get their CPU time from the
	// period (otlpprofile).
	if cpu := byType[store.CPU]; cpu["cpu"] != nil {
		byType[store.CPU] = map[string][]*profile.Profile{"cpu": cpu["cpu"]}
	}
	out := map[store.Kind]*profile.Profile{}
	for _, k := range store.Kinds {
		var parts []*profile.Profile
		for _, t := range slices.Sorted(maps.Keys(byType[k])) {
			m, err := merge(byType[k][t])
			if err != nil {
				return nil, fmt.Errorf("%s: %s %s: %w", f.Describe(), s.Service, k, err)
			}
			parts = append(parts, m)
		}
		if len(parts) == 0 {
			continue
		}
		var p *profile.Profile
		var err error
		if len(parts) == 1 || len(parts[0].SampleType) > 1 {
			p = parts[0]
			p.DefaultSampleType = defaults[k]
		} else if p, err = store.Combine(defaults[k], parts...); err != nil {
			return nil, fmt.Errorf("%s: %s %s: %w", f.Describe(), s.Service, k, err)
		}
		p.TimeNanos, p.DurationNanos = r.From.UnixNano(), r.Duration().Nanoseconds()
		out[k] = p
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: %s: %w in %s .. %s", f.Describe(), s.Service, store.ErrNoProfiles,
			r.From.UTC().Format(time.RFC3339), r.To.UTC().Format(time.RFC3339))
	}
	return out, nil
}

// merge merges profiles of one type at the first one's period.
func merge(ps []*profile.Profile) (*profile.Profile, error) {
	if len(ps) == 1 {
		return ps[0].Copy(), nil
	}
	same := make([]*profile.Profile, len(ps))
	for i, p := range ps {
		same[i] = p
		if p.Period != ps[0].Period || !sameType(p.PeriodType, ps[0].PeriodType) {
			c := p.Copy()
			c.Period, c.PeriodType = ps[0].Period, ps[0].PeriodType
			same[i] = c
		}
	}
	return profile.Merge(same)
}

func sameType(a, b *profile.ValueType) bool {
	return (a == nil) == (b == nil) && (a == nil || *a == *b)
}
