package evidence

import (
	"slices"

	"github.com/google/pprof/profile"

	"github.com/perfdoctor/perfdoctor/bundle"
	"github.com/perfdoctor/perfdoctor/evidence/trace"
	"github.com/perfdoctor/perfdoctor/formats/gctrace"
	"github.com/perfdoctor/perfdoctor/formats/goroutines"
	"github.com/perfdoctor/perfdoctor/formats/jfr"
)

// Builder assembles Evidence from parts already in memory, where Load
// reads files: perfdoctor sys's window, a fleet's merged profiles, and
// tests. Each method sets one part and returns the builder; Evidence
// hands the result over, after which the builder must not be used.
type Builder struct{ e *Evidence }

// NewBuilder starts evidence named after its sources.
func NewBuilder(sources ...string) *Builder {
	return &Builder{e: &Evidence{Sources: sources, Profiles: map[Kind]*profile.Profile{}}}
}

// Profile sets the profile of kind k (nil leaves it out).
func (b *Builder) Profile(k Kind, p *profile.Profile) *Builder {
	if p != nil {
		b.e.Profiles[k] = p
	}
	return b
}

// Metrics sets the runtime statistics at the window's ends (either nil).
func (b *Builder) Metrics(start, end *bundle.RuntimeStats) *Builder {
	b.e.MetricsStart, b.e.MetricsEnd = start, end
	return b
}

// System sets the /proc snapshots at the window's ends (either nil).
func (b *Builder) System(start, end *bundle.SystemSnapshot) *Builder {
	b.e.SystemStart, b.e.SystemEnd = start, end
	return b
}

// Trace sets the execution trace's summary.
func (b *Builder) Trace(s *trace.Summary) *Builder {
	b.e.TraceSummary = s
	return b
}

// GCTrace sets the collector log's summary.
func (b *Builder) GCTrace(s *gctrace.Summary) *Builder {
	b.e.GCTrace = s
	return b
}

// JVM sets a JFR recording's JVM summary.
func (b *Builder) JVM(s *jfr.Summary) *Builder {
	b.e.JVM = s
	return b
}

// Load sets the load that ran during the window.
func (b *Builder) Load(l *bundle.LoadResult) *Builder {
	b.e.Load = l
	return b
}

// ConfigFiles sets a server's configuration files (nil: none read).
func (b *Builder) ConfigFiles(c *bundle.ConfigFiles) *Builder {
	b.e.ConfigFiles = c
	return b
}

// Manifest sets the bundle's manifest.
func (b *Builder) Manifest(m *bundle.Manifest) *Builder {
	b.e.Manifest = m
	return b
}

// Goroutines sets the goroutine dump taken at the window's end.
func (b *Builder) Goroutines(d *goroutines.Dump) *Builder {
	b.e.GoroutineStacks = d
	return b
}

// HeapSeries sets every heap profile of the window, oldest first; the
// first and last become the start and end heaps.
func (b *Builder) HeapSeries(heaps ...*profile.Profile) *Builder {
	if len(heaps) == 0 {
		return b
	}
	l := loader{Evidence: b.e}
	l.placeHeaps(heaps)
	return b
}

// Evidence returns what was built. Perf stacks stand in for a CPU profile
// when there is none, as when loaded from files.
func (b *Builder) Evidence() *Evidence {
	l := loader{Evidence: b.e}
	l.perfAsCPU()
	e := b.e
	b.e = nil
	return e
}

// Sources renames what the evidence was read from.
func (b *Builder) Sources(sources ...string) *Builder {
	b.e.Sources = sources
	return b
}

// Derive starts a builder from e's parts, for evidence that differs from e
// in a few (a fleet's service: one instance's evidence with every
// instance's CPU profiles merged). e itself is left as it is.
func (e *Evidence) Derive() *Builder {
	c := *e
	c.Profiles = make(map[Kind]*profile.Profile, len(e.Profiles))
	for k, p := range e.Profiles {
		c.Profiles[k] = p
	}
	c.Files = slices.Clone(e.Files)
	c.Sources = slices.Clone(e.Sources)
	return &Builder{e: &c}
}
