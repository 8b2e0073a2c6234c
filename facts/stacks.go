package facts

import (
	"path/filepath"
	"strings"

	"github.com/google/pprof/profile"

	"github.com/perfdoctor/perfdoctor/evidence"
	"github.com/perfdoctor/perfdoctor/formats/perfscript"
)

// CPUStacks is the CPU profile flattened; nil without one.
var CPUStacks = &Fact[*evidence.Stacks]{
	Name: "cpu-stacks",
	Doc:  "The CPU profile (pprof, or perf's on-CPU event standing in for it) flattened into interned stacks.",
	Compute: func(p *Pass) *evidence.Stacks {
		return evidence.NewStacks(p.Evidence.Profile(evidence.CPU), "cpu")
	},
}

// PerfStacks is the perf profile flattened by samples; nil without one.
var PerfStacks = &Fact[*evidence.Stacks]{
	Name: "perf-stacks",
	Doc:  "Linux perf's stacks (kernel frames included) flattened by samples.",
	Compute: func(p *Pass) *evidence.Stacks {
		return evidence.NewStacks(p.Evidence.Profile(evidence.Perf), "samples")
	},
}

// Allocations is what was allocated during the window.
type Allocations struct {
	// Profile is the window's allocations: the end allocs profile less the
	// start heap profile's counts, else the counts since process start;
	// nil without an allocs or heap profile.
	Profile *profile.Profile
	// InWindow says the counts are the window's only; false when they are
	// since process start (no start heap, or the two do not merge).
	InWindow bool
}

// WindowAllocs is the allocations made in the window (evidence.WindowAllocs).
var WindowAllocs = &Fact[Allocations]{
	Name: "window-allocs",
	Doc:  "The allocations made during the window: the end allocs profile less the start heap profile's alloc counts, so a cache built at startup does not pass for the window's top allocation site.",
	Compute: func(p *Pass) Allocations {
		prof, in := p.Evidence.WindowAllocs()
		return Allocations{Profile: prof, InWindow: in}
	},
}

// AllocStacks is the window's allocated bytes flattened; nil without an
// allocs or heap profile.
var AllocStacks = &Fact[*evidence.Stacks]{
	Name:     "alloc-stacks",
	Doc:      "The window's allocations (window-allocs) flattened by bytes allocated.",
	Requires: []Key{WindowAllocs},
	Compute: func(p *Pass) *evidence.Stacks {
		return evidence.NewStacks(Get(p, WindowAllocs).Profile, "alloc_space")
	},
}

// KernelFrames matches the functions the perf profile, or a CPU profile
// converted from perf or folded stacks, saw in the kernel.
var KernelFrames = &Fact[evidence.Matcher]{
	Name:    "kernel-frames",
	Doc:     "The functions perf (or a CPU profile converted from perf or folded stacks) saw in the kernel.",
	Compute: func(p *Pass) evidence.Matcher { return framesAt(p.Evidence, perfscript.IsKernel) },
}

// SystemFrames matches what a CPU profile from perf or folded stacks saw
// outside the program's own binary: the kernel, the vDSO and shared
// libraries (libc, libpthread, libstdc++). For a native service they are
// what the standard library is for a Go one: calls its code makes.
var SystemFrames = &Fact[evidence.Matcher]{
	Name: "system-frames",
	Doc:  "The functions seen outside the program's own binary: the kernel, the vDSO and shared libraries.",
	Compute: func(p *Pass) evidence.Matcher {
		return framesAt(p.Evidence, func(l *profile.Location) bool {
			return perfscript.IsKernel(l) || (l.Mapping != nil && isSystemObject(l.Mapping.File))
		})
	},
}

// framesAt matches the functions at the perf profiles' (on and off the
// CPU) and the CPU profile's locations that where accepts.
func framesAt(ev *evidence.Evidence, where func(*profile.Location) bool) evidence.Matcher {
	names := map[string]bool{}
	for _, k := range []evidence.Kind{evidence.Perf, evidence.OffCPU, evidence.CPU} {
		p := ev.Profiles[k]
		if p == nil {
			continue
		}
		for _, l := range p.Location {
			if where(l) {
				for _, ln := range l.Line {
					names[ln.Function.Name] = true
				}
			}
		}
	}
	return func(fn string) bool { return names[fn] }
}

func isSystemObject(file string) bool {
	base := filepath.Base(file)
	return base == "[vdso]" || strings.HasSuffix(base, ".so") || strings.Contains(base, ".so.")
}

// CoresUsed is the CPU the process used over the window, in cores, as its
// profile says: the CPU profile's time over its duration (pprof's and perf's
// samples are CPU time of every thread), or for a JVM the JVM's own CPU
// load (JFR's execution sampler takes a few Java threads at a time: its
// samples are not the process's CPU time). 0 when unknown.
var CoresUsed = &Fact[float64]{
	Name:     "cores-used",
	Doc:      "The CPU the process used over the window, in cores: the CPU profile's samples over its duration, or for a JVM its jdk.CPULoad times its hardware threads.",
	Requires: []Key{CPUStacks},
	Compute: func(p *Pass) float64 {
		if j := p.Evidence.JVM; j != nil {
			if j.JVMCPU > 0 && j.HWThreads > 0 {
				return j.JVMCPU * float64(j.HWThreads)
			}
			return 0
		}
		prof := p.Evidence.Profile(evidence.CPU)
		st := Get(p, CPUStacks)
		if prof == nil || prof.DurationNanos <= 0 || st == nil || st.Unit != "nanoseconds" {
			return 0
		}
		return float64(st.Total) / float64(prof.DurationNanos)
	},
}
