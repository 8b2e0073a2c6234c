package store

import (
	"strings"
	"testing"
	"time"

	"github.com/google/pprof/profile"
)

func TestParseRange(t *testing.T) {
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		from, to   string
		start, end time.Time
	}{
		{"", "", now.Add(-time.Hour), now},
		{"30m", "now", now.Add(-30 * time.Minute), now},
		{"-2h", "1h", now.Add(-2 * time.Hour), now.Add(-time.Hour)},
		{"2026-11-27T10:00:00Z", "2026-11-27T11:00:00Z", now.Add(-2 * time.Hour), now.Add(-time.Hour)},
		{"", "10m", now.Add(-70 * time.Minute), now.Add(-10 * time.Minute)},
	} {
		r, err := ParseRange(c.from, c.to, now)
		if err != nil || !r.From.Equal(c.start) || !r.To.Equal(c.end) {
			t.Errorf("%q..%q = %v..%v, %v; want %v..%v", c.from, c.to, r.From, r.To, err, c.start, c.end)
		}
	}
	for _, c := range [][2]string{{"yesterday", ""}, {"1h", "2h"}, {"", "soon"}} {
		if _, err := ParseRange(c[0], c[1], now); err == nil || strings.Contains(err.Error(), "\n") {
			t.Errorf("%q..%q: want a one-line error, got %v", c[0], c[1], err)
		}
	}
}

func TestCombine(t *testing.T) {
	fn := &profile.Function{ID: 1, Name: "f"}
	mk := func(typ string, stacks ...int64) *profile.Profile {
		p := &profile.Profile{SampleType: []*profile.ValueType{{Type: typ, Unit: "x"}}, Function: []*profile.Function{fn},
			TimeNanos: 5, DurationNanos: 7}
		for i, v := range stacks {
			l := &profile.Location{ID: uint64(i + 1), Address: uint64(0x10 * (i + 1)), Line: []profile.Line{{Function: fn}}}
			p.Location = append(p.Location, l)
			p.Sample = append(p.Sample, &profile.Sample{Location: []*profile.Location{l}, Value: []int64{v}})
		}
		return p
	}
	c, err := Combine("a", mk("a", 1, 2), nil, mk("b", 10, 20))
	if err != nil {
		t.Fatal(err)
	}
	if len(c.SampleType) != 2 || c.DefaultSampleType != "a" || c.DurationNanos != 7 || c.TimeNanos != 5 {
		t.Fatalf("types %v default %q time %d+%d", c.SampleType, c.DefaultSampleType, c.TimeNanos, c.DurationNanos)
	}
	var a, b int64
	for _, s := range c.Sample {
		a, b = a+s.Value[0], b+s.Value[1]
	}
	if a != 3 || b != 30 || len(c.Sample) != 2 {
		t.Errorf("sums %d %d over %d samples, want 3 and 30 over 2 (equal stacks merged)", a, b, len(c.Sample))
	}
	if p, err := Combine("a"); p != nil || err != nil {
		t.Errorf("nothing to combine: %v %v", p, err)
	}
	if _, err := Combine("a", c, c); err == nil {
		t.Error("profiles of two sample types are refused")
	}
}
