package otlpfile_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/pprof/profile"

	"github.com/perfdoctor/perfdoctor/collect/otlpfile"
	"github.com/perfdoctor/perfdoctor/collect/store"
	"github.com/perfdoctor/perfdoctor/internal/otlptest"
)

func cpuProfile(at time.Time, ns int64) *profile.Profile {
	fn := &profile.Function{ID: 1, Name: "main.work"}
	l := &profile.Location{ID: 1, Line: []profile.Line{{Function: fn}}}
	return &profile.Profile{SampleType: []*profile.ValueType{{Type: "cpu", Unit: "nanoseconds"}},
		PeriodType: &profile.ValueType{Type: "cpu", Unit: "nanoseconds"}, Period: 1e7,
		TimeNanos: at.UnixNano(), DurationNanos: int64(10 * time.Second),
		Function: []*profile.Function{fn}, Location: []*profile.Location{l},
		Sample: []*profile.Sample{{Location: []*profile.Location{l}, Value: []int64{ns}}}}
}

// TestFilesAsStore: services by service.name, instances by
// service.instance.id else host.name, profiles merged within the range,
// the files' span as the default range.
func TestFilesAsStore(t *testing.T) {
	t0 := time.Unix(1_800_000_000, 0)
	path := filepath.Join(t.TempDir(), "p.json")
	early := otlptest.FromPprof(
		otlptest.Resource{Attributes: map[string]string{"service.name": "api", "service.instance.id": "i-1"}, Profiles: []*profile.Profile{cpuProfile(t0, 1e9)}},
		otlptest.Resource{Attributes: map[string]string{"service.name": "api", "host.name": "h-2"}, Profiles: []*profile.Profile{cpuProfile(t0, 3e9)}})
	late := otlptest.FromPprof(
		otlptest.Resource{Attributes: map[string]string{"service.name": "api", "service.instance.id": "i-1"}, Profiles: []*profile.Profile{cpuProfile(t0.Add(time.Minute), 5e9)}})
	if err := otlptest.WriteJSONLines(path, early, late); err != nil {
		t.Fatal(err)
	}
	f, err := otlpfile.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	span := f.Span()
	if !span.From.Equal(t0) || !span.To.Equal(t0.Add(70*time.Second)) {
		t.Errorf("span %v..%v", span.From, span.To)
	}
	series, err := f.Series(context.Background(), span, "")
	if err != nil || len(series) != 2 || series[0].Instance != "h-2" || series[1].Instance != "i-1" {
		t.Fatalf("series %+v, %v", series, err)
	}
	sum := func(r store.Range, s store.Series) int64 {
		ps, err := f.Profiles(context.Background(), r, s)
		if err != nil {
			t.Fatal(err)
		}
		var v int64
		for _, smp := range ps[store.CPU].Sample {
			v += smp.Value[0]
		}
		if ps[store.CPU].DurationNanos != r.Duration().Nanoseconds() {
			t.Errorf("duration %d, want the range's", ps[store.CPU].DurationNanos)
		}
		return v
	}
	if v := sum(span, store.Series{Service: "api"}); v != 9e9 {
		t.Errorf("the whole service over the span: %d ns, want 9e9", v)
	}
	first := store.Range{From: t0, To: t0.Add(30 * time.Second)}
	if v := sum(first, store.Series{Service: "api", Instance: "i-1"}); v != 1e9 {
		t.Errorf("i-1 in the first 30 s: %d ns, want 1e9", v)
	}
	if _, err := f.Profiles(context.Background(), span, store.Series{Service: "web"}); err == nil {
		t.Error("a service the files do not hold")
	}
	if _, err := otlpfile.Open(filepath.Join(t.TempDir(), "missing.json")); err == nil {
		t.Error("a missing file")
	}
}
