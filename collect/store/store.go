// Package store is what perfdoctor reads from a continuous-profiling store
// (a Pyroscope server, OTLP profiles files) instead of scraping targets: the
// services and instances it holds profiles for over a time range, and their
// profiles of each kind, already merged over that range. The readers live
// beside it (collect/pyroscope, collect/otlpfile); the fleet and the CLI
// turn what they return into evidence.
package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/pprof/profile"
)

// Kind is a kind of profile a store may hold, named as perfdoctor's
// evidence names it.
type Kind string

// The kinds a store can give: windowed profiles, which add up across
// processes and over time. A store holds no runtime statistics, heap
// snapshot, goroutine dump or execution trace: the rules that need those
// are listed as not checked.
const (
	CPU    Kind = "cpu"
	Allocs Kind = "allocs"
	Mutex  Kind = "mutex"
	Block  Kind = "block"
)

// Kinds are every kind a store can give, in the order readers fetch them.
var Kinds = []Kind{CPU, Allocs, Mutex, Block}

// Range is the time range profiles are read over: the window.
type Range struct{ From, To time.Time }

// Duration is the range's length.
func (r Range) Duration() time.Duration { return r.To.Sub(r.From) }

// ParseRange reads --from and --to: RFC 3339 times, or durations before
// now ("1h" is an hour ago); an empty to is now, an empty from is an hour
// before to.
func ParseRange(from, to string, now time.Time) (Range, error) {
	parse := func(s string, def time.Time) (time.Time, error) {
		s = strings.TrimSpace(s)
		if s == "" || s == "now" {
			return def, nil
		}
		if d, err := time.ParseDuration(strings.TrimPrefix(s, "-")); err == nil {
			return now.Add(-d), nil
		}
		t, err := time.Parse(time.RFC3339, s)
		if err != nil {
			return time.Time{}, fmt.Errorf("%q is neither an RFC 3339 time nor a duration before now (1h)", s)
		}
		return t, nil
	}
	end, err := parse(to, now)
	if err != nil {
		return Range{}, fmt.Errorf("--to: %w", err)
	}
	start, err := parse(from, end.Add(-time.Hour))
	if err != nil {
		return Range{}, fmt.Errorf("--from: %w", err)
	}
	r := Range{From: start, To: end}
	if !r.To.After(r.From) {
		return Range{}, fmt.Errorf("time range %s .. %s is empty", r.From.Format(time.RFC3339), r.To.Format(time.RFC3339))
	}
	return r, nil
}

// Series is one service, or one instance of it, that the store holds
// profiles for.
type Series struct {
	Service string
	// Instance is empty when the store's labels name no instance: the
	// service is then read as one.
	Instance string
}

// Reader reads a store.
type Reader interface {
	// Describe names the store for reports, credentials redacted:
	// "pyroscope http://host:4040".
	Describe() string
	// Series lists every service and instance holding profiles in r, by
	// service then instance; service, if not empty, selects one.
	Series(ctx context.Context, r Range, service string) ([]Series, error)
	// Profiles returns s's profiles of each kind the store holds for it,
	// merged over r; an empty s.Instance means the whole service. Each
	// profile's DurationNanos is its time range's, so CPU time over it is
	// cores. Kinds the store does not hold are absent.
	Profiles(ctx context.Context, r Range, s Series) (map[Kind]*profile.Profile, error)
}

// ErrNoProfiles is returned when a selection holds no profiles.
var ErrNoProfiles = errors.New("no profiles")

// Combine makes one profile of several that share stacks but each carry
// one sample type (a store's alloc_objects and alloc_space, a mutex's
// contentions and delay): every sample gets every type, zero where its
// profile lacked it, and samples of equal stacks are merged. nil parts
// are skipped; with none it returns nil.
func Combine(defaultType string, parts ...*profile.Profile) (*profile.Profile, error) {
	var ps []*profile.Profile
	var types []*profile.ValueType
	for _, p := range parts {
		if p == nil {
			continue
		}
		if len(p.SampleType) != 1 {
			return nil, fmt.Errorf("combining profiles: want one sample type each, got %d", len(p.SampleType))
		}
		ps = append(ps, p)
		types = append(types, &profile.ValueType{Type: p.SampleType[0].Type, Unit: p.SampleType[0].Unit})
	}
	switch len(ps) {
	case 0:
		return nil, nil
	case 1:
		ps[0].DefaultSampleType = defaultType
		return ps[0], nil
	}
	widened := make([]*profile.Profile, len(ps))
	for i, p := range ps {
		w := p.Copy()
		w.SampleType = types
		for _, s := range w.Sample {
			v := make([]int64, len(types))
			v[i] = s.Value[0]
			s.Value = v
		}
		widened[i] = w
	}
	// Merge wants equal periods; the parts of one kind share theirs, but a
	// store may leave one unset.
	for _, w := range widened[1:] {
		w.PeriodType, w.Period = widened[0].PeriodType, widened[0].Period
	}
	out, err := profile.Merge(widened)
	if err != nil {
		return nil, fmt.Errorf("combining profiles: %w", err)
	}
	out.DefaultSampleType = defaultType
	out.TimeNanos, out.DurationNanos = ps[0].TimeNanos, ps[0].DurationNanos // one range, not their sum
	return out, nil
}
