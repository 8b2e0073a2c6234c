// Package human formats numbers, sizes, shares and durations for people to
// read, the same way in findings, reports, the load generator's tables and
// the CLI. It is the one place these formats live.
package human

import (
	"fmt"
	"math"
	"strings"
	"time"
)

// Number formats a count for reading: 7, 0.25, 19.1, 48.2k, 11.0M.
func Number(v float64) string {
	switch a := math.Abs(v); {
	case a >= 1e9:
		return fmt.Sprintf("%.1fG", v/1e9)
	case a >= 1e6:
		return fmt.Sprintf("%.1fM", v/1e6)
	case a >= 1e4:
		return fmt.Sprintf("%.1fk", v/1e3)
	case v == math.Trunc(v) || a >= 100:
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.3g", v)
}

// Percent formats a fraction as a percentage with sensible precision.
func Percent(v float64) string {
	switch {
	case v >= 0.1:
		return fmt.Sprintf("%.0f%%", v*100)
	case v >= 0.001:
		return fmt.Sprintf("%.1f%%", v*100)
	case v > 0:
		return "<0.1%"
	}
	return "0%"
}

// Bytes formats a size with a binary unit.
func Bytes(v uint64) string {
	const unit = 1024
	if v < unit {
		return fmt.Sprintf("%d B", v)
	}
	div, exp := uint64(unit), 0
	for n := v / unit; n >= unit && exp < 4; n /= unit {
		div *= unit
		exp++
	}
	s := fmt.Sprintf("%.1f", float64(v)/float64(div))
	s = strings.TrimSuffix(s, ".0")
	return s + " " + string("KMGTP"[exp]) + "iB"
}

// RoundDuration rounds a span for reading: to milliseconds from a second,
// to 10 µs from a millisecond, else to microseconds.
func RoundDuration(d time.Duration) time.Duration {
	switch {
	case d >= time.Second:
		return d.Round(time.Millisecond)
	case d >= time.Millisecond:
		return d.Round(10 * time.Microsecond)
	}
	return d.Round(time.Microsecond)
}

// Millis formats a latency given in milliseconds with two decimals: 950 µs,
// 12.34 ms, 1.50 s.
func Millis(v float64) string {
	switch {
	case v >= 1000:
		return fmt.Sprintf("%.2f s", v/1000)
	case v >= 1:
		return fmt.Sprintf("%.2f ms", v)
	}
	return fmt.Sprintf("%.0f µs", v*1000)
}
