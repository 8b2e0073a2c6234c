package rules

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/perfdoctor/perfdoctor/evidence"
	"github.com/perfdoctor/perfdoctor/internal/human"
)

// Skip records that the rule could not reach a verdict on this evidence
// (too few samples, say), so the user sees it under "not checked".
func (p *Pass) Skip(reason string) {
	p.skipped = append(p.skipped, reason)
}

// IsApplication matches frames outside the Go runtime and standard library
// (and the JDK): the service's own code and its third-party libraries.
func IsApplication(fn string) bool {
	if evidence.IsJava(fn) {
		return !evidence.IsJDK(fn)
	}
	return fn != "" && !evidence.IsRuntime(fn) && !evidence.IsStdlib(fn)
}

// Locations turns profile sites into finding locations with a role.
func Locations(sites []evidence.Site, role string) []Location {
	out := make([]Location, 0, len(sites))
	for _, s := range sites {
		out = append(out, Location{Function: s.Func, File: s.File, Line: s.Line, Share: s.Flat, Role: role})
	}
	return out
}

// MinCPUSamples is the fewest CPU samples (at 100 Hz, one second of CPU)
// from which rules draw conclusions about shares.
const MinCPUSamples = 100

// EnoughCPU reports whether the CPU profile has enough samples for shares
// to mean something, and records a skip when it does not.
func (p *Pass) EnoughCPU() bool {
	// Counted by the samples type, not the first value, which may be time.
	if n := evidence.SampleCount(p.Evidence.Profile(evidence.CPU)); n < MinCPUSamples {
		p.Skip("the CPU profile has too few samples to judge shares; profile longer or under load")
		return false
	}
	return true
}

// ShortFunc drops the import path's directories: "github.com/a/b.(*T).M"
// becomes "b.(*T).M".
func ShortFunc(fn string) string { return evidence.ShortFunc(fn) }

// SiteList formats the first n sites as "pkg.Func (file.go:12) 31%, ...".
func SiteList(sites []evidence.Site, n int) string {
	var parts []string
	for _, s := range sites[:min(n, len(sites))] {
		parts = append(parts, SiteName(s.Frame)+" "+human.Percent(s.Flat))
	}
	return strings.Join(parts, ", ")
}

// Grade maps a share to a severity with a rule's own thresholds: Low below
// medium, Medium from medium, High from high.
func Grade(share, medium, high float64) Severity {
	switch {
	case share >= high:
		return High
	case share >= medium:
		return Medium
	}
	return Low
}

// SiteName formats a frame as "pkg.Func (file.go:12)".
func SiteName(f evidence.Frame) string {
	name := ShortFunc(f.Func)
	if f.File != "" {
		name += fmt.Sprintf(" (%s:%d)", filepath.Base(f.File), f.Line)
	}
	return name
}

// RedundantModules is advice to remove the modules the target's Go makes
// redundant (automaxprocs on Go >= 1.25), from its build information; ""
// when there are none or the build is not known.
func RedundantModules(ev *evidence.Evidence) string {
	r := ev.Build().Redundant()
	if len(r) == 0 {
		return ""
	}
	return "Remove " + strings.Join(r, "; ") + ". "
}
