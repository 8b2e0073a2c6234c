package rules

import "github.com/perfdoctor/perfdoctor/formats/jfr"

// JFRLocations turns code sites a JFR recording's events named (the
// threads a safepoint waited for, the allocations ZGC stalled) into
// finding locations, each with its share of the sites' count.
func JFRLocations(sites []jfr.Site, n int, role string) []Location {
	var total int
	for _, s := range sites {
		total += s.Count
	}
	out := make([]Location, 0, min(n, len(sites)))
	for _, s := range sites[:min(n, len(sites))] {
		out = append(out, Location{Function: s.Function, Line: s.Line, Share: float64(s.Count) / float64(max(total, 1)), Role: role})
	}
	return out
}
