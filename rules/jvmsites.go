package rules

import (
	"time"

	"github.com/perfdoctor/perfdoctor/formats/jfr"
)

// JFRLocations turns code sites a JFR recording's events named (the
// threads a safepoint waited for, the allocations ZGC stalled) into
// finding locations, each with its share of the sites' time, or of their
// count when the events carry no time.
func JFRLocations(sites []jfr.Site, n int, role string) []Location {
	var count int
	var total time.Duration
	for _, s := range sites {
		count += s.Count
		total += s.Time
	}
	out := make([]Location, 0, min(n, len(sites)))
	for _, s := range sites[:min(n, len(sites))] {
		share := float64(s.Count) / float64(max(count, 1))
		if total > 0 {
			share = float64(s.Time) / float64(total)
		}
		out = append(out, Location{Function: s.Function, Line: s.Line, Share: share, Role: role})
	}
	return out
}
