package evidence

import (
	"strings"
	"time"

	"github.com/google/pprof/profile"
)

// nameSampleTypes gives unnamed sample types the name their unit implies,
// so a profile whose writer left the names out is read by unit instead of
// by position: a count is samples, a time is CPU time when the period is
// (or no period is named), bytes are heap space. A CPU profile that counts
// samples only, with a CPU period, gains the cpu/nanoseconds type rules read.
func nameSampleTypes(p *profile.Profile) {
	period := ""
	if p.PeriodType != nil {
		period = p.PeriodType.Type
	}
	for _, st := range p.SampleType {
		if st.Type != "" {
			continue
		}
		switch unit := strings.ToLower(st.Unit); {
		case unit == "count" || unit == "":
			st.Type = "samples"
		case isTimeUnit(unit) && (period == "" || period == "cpu"):
			st.Type = "cpu"
		case isTimeUnit(unit):
			st.Type = period
		case unit == "bytes":
			st.Type = "space"
		}
	}
	if sampleIndex(p, "cpu") >= 0 || period != "cpu" || p.Period <= 0 || p.PeriodType.Unit != "nanoseconds" {
		return
	}
	if i := sampleIndex(p, "samples"); i >= 0 && p.SampleType[i].Unit == "count" {
		p.SampleType = append(p.SampleType, &profile.ValueType{Type: "cpu", Unit: "nanoseconds"})
		for _, s := range p.Sample {
			s.Value = append(s.Value, s.Value[i]*p.Period)
		}
	}
}

func isTimeUnit(u string) bool {
	switch u {
	case "nanoseconds", "microseconds", "milliseconds", "seconds", "ns", "us", "ms", "s":
		return true
	}
	return false
}

// SampleCount is the number of samples in a profile: its samples/count
// type when it has one; else its time divided by the sampling period (or
// 10ms when none is recorded), never a time or byte value taken as a count.
func SampleCount(p *profile.Profile) int64 {
	if p == nil {
		return 0
	}
	sum := func(i int) int64 {
		var n int64
		for _, s := range p.Sample {
			if i < len(s.Value) {
				n += s.Value[i]
			}
		}
		return n
	}
	for i, st := range p.SampleType {
		if st.Unit == "count" && (st.Type == "samples" || st.Type == "sample") {
			return sum(i)
		}
	}
	for i, st := range p.SampleType {
		if st.Unit == "nanoseconds" {
			period := int64(10 * time.Millisecond)
			if p.PeriodType != nil && p.PeriodType.Unit == "nanoseconds" && p.Period > 0 {
				period = p.Period
			}
			return sum(i) / period
		}
	}
	for i, st := range p.SampleType {
		if st.Unit == "count" {
			return sum(i)
		}
	}
	return 0
}
