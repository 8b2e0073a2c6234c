// Package cpu001 names the application's own hottest code when no
// specific rule explains where the CPU goes (finding class hot-function).
package cpu001

import (
	"fmt"
	"sort"
	"strings"

	"github.com/perfdoctor/perfdoctor/facts"

	"github.com/perfdoctor/perfdoctor/bundle"
	"github.com/perfdoctor/perfdoctor/evidence"
	"github.com/perfdoctor/perfdoctor/facts/frames"
	"github.com/perfdoctor/perfdoctor/internal/human"
	"github.com/perfdoctor/perfdoctor/rules"
)

// Rule is CPU001.
var Rule = &rules.Rule{
	ID:    "CPU001",
	Class: "hot-function",
	Doc: rules.Doc{
		Title: "One of the application's functions dominates CPU",
		Text: `The fallback: when no specific rule explains the CPU, perfdoctor still points
at the place to look. Each CPU sample is charged to the innermost frame outside
the Go runtime and standard library (the service's own code or a library it
calls), so a function that spends its time in sort or strings is charged for it.`,
		Evidence: `The CPU profile, minus the samples that other findings already explain.
Reports the top function from 5% of CPU with its hottest lines and callers, at
severity info, or low from 15%: every service has a hottest function, so this
finding is where to look, never an alarm. Frames perf could not symbolize
("[unknown]") are never named: their time goes to the first named frame above
them, samples with none are left out of the shares, and from 5% the report says
how much was unnamed and how to name it. When no function of the program is
named above a native library family (OpenSSL, memcpy/malloc, PCRE, protobuf and
other serializers) and the library outweighs every named function, the library
is reported with its own prescription.`,
		Fix: `Read the named lines: look for work that grows with input size (nested loops
over slices, a linear search that wants a map or set), repeated conversions,
and work that could be done once instead of per request.`,
		Before:  `for _, a := range xs { for _, b := range ys { if a == b { ... } } }   // O(n*m)`,
		After:   `set := make(map[T]struct{}, len(ys)); ...; if _, ok := set[a]; ok { ... }`,
		Caveats: `The estimated gain assumes the code can be made about twice as fast; the real figure depends on the algorithm.`,
		Since:   "0.1",
	},
	Needs:    []rules.Input{rules.CPU},
	Fallback: true,
	Facts:    []facts.Key{facts.CPUStacks, facts.Owners, facts.SystemFrames},
	Check:    check,
}

const (
	minShare = 0.05
	// unsymbolizedNote is the share of samples ending in unnamed frames
	// from which the report says so and how to name them.
	unsymbolizedNote = 0.05
)

func check(pass *rules.Pass) error {
	if !pass.EnoughCPU() {
		return nil
	}
	cpu := facts.Get(pass.Facts, facts.CPUStacks)
	explained := map[string]bool{}
	for _, f := range pass.Earlier {
		for _, fn := range f.Frames {
			explained[fn] = true
		}
	}
	isExplained := cpu.Has(func(fn string) bool { return explained[fn] })
	unexplained := func(s evidence.Sample) bool { return !isExplained(s) }
	// Kernel and shared-library frames (perf, folded stacks) are calls the
	// code above them made: their time is charged to the application
	// function that made them, as the Go standard library's is.
	// Unsymbolized frames ("[unknown]") are never named: their time is
	// charged to the first named frame above them, and samples with none
	// are left out of the shares, which are computed on what is known.
	system := facts.Get(pass.Facts, facts.SystemFrames)
	appFrame := cpu.First(func(fn string) bool { return rules.IsApplication(fn) && !system(fn) && !frames.Unsymbolized(fn) })
	// A sample with no named application frame whose leaf is in a native
	// library family (OpenSSL, malloc, PCRE...) is charged to the library.
	libHits := make([][]bool, len(frames.NativeLibraries))
	for i, lib := range frames.NativeLibraries {
		libHits[i] = cpu.FrameHits(lib.Match)
	}
	byFunc := map[string]int64{}
	byLib := make([]int64, len(frames.NativeLibraries))
	known := cpu.Total
	for _, s := range cpu.Samples {
		if !unexplained(s) {
			continue
		}
		if f := appFrame(s); f != nil {
			byFunc[f.Func] += s.Value
			continue
		}
		if len(s.Frames) == 0 {
			continue
		}
		lib := -1
		for i, hit := range libHits {
			if hit[s.Frames[0]] {
				lib = i
				break
			}
		}
		switch {
		case lib >= 0:
			byLib[lib] += s.Value
		case frames.Unsymbolized(cpu.Frames[s.Frames[0]].Func):
			known -= s.Value
		}
	}
	unknownLeaf := 1 - float64(known)/float64(cpu.Total) // no named frame to charge
	if unknownLeaf >= unsymbolizedNote {
		pass.Skip(fmt.Sprintf("%s of CPU samples end in unsymbolized frames ([unknown]) and are not charged to any function; to name them, %s",
			human.Percent(unknownLeaf), frames.SymbolizeAdvice))
	}
	if known <= 0 {
		return nil
	}
	if reportLibrary(pass, cpu, byLib, byFunc, known, unknownLeaf) {
		return nil
	}
	if len(byFunc) == 0 {
		return nil
	}
	names := make([]string, 0, len(byFunc))
	for fn := range byFunc {
		names = append(names, fn)
	}
	sort.Slice(names, func(i, j int) bool {
		if byFunc[names[i]] != byFunc[names[j]] {
			return byFunc[names[i]] > byFunc[names[j]]
		}
		return names[i] < names[j]
	})
	top := names[0]
	share := float64(byFunc[top]) / float64(known)
	if share < minShare {
		return nil
	}
	cum := cpu.Share(func(fn string) bool { return fn == top }) * float64(cpu.Total) / float64(known)
	lines := cpu.TopSites(5, func(s evidence.Sample) *evidence.Frame {
		if !unexplained(s) {
			return nil
		}
		if f := appFrame(s); f != nil && f.Func == top {
			return f
		}
		return nil
	})
	callers := cpu.TopSites(3, func(s evidence.Sample) *evidence.Frame {
		for i, id := range s.Frames {
			if cpu.Frames[id].Func == top && i+1 < len(s.Frames) {
				return &cpu.Frames[s.Frames[i+1]]
			}
		}
		return nil
	})
	// A healthy service always has a hottest function, usually its request
	// handler doing its job: naming it is guidance, not an alarm.
	sev := rules.Info
	if share >= 0.15 {
		sev = rules.Low
	}
	f := rules.Finding{
		Severity:    sev,
		Impact:      float64(byFunc[top]) / float64(cpu.Total) / 2, // of all CPU, as other rules' impacts are
		Resource:    "cpu",
		ImpactBasis: "half of the CPU charged to the function: assumes it can be made about twice as fast",
		Summary:     fmt.Sprintf("%s uses %s of CPU (its own code and the library calls it makes)", rules.ShortFunc(top), human.Percent(share)),
		Evidence: []rules.Fact{
			rules.Share("CPU charged to the function", share),
			rules.Share("CPU with the function on the stack (cum)", cum),
		},
		Fix:       pass.Rule.Doc.Fix + pgoAdvice(pass.Evidence),
		Locations: append(rules.Locations(lines, "hot line"), rules.Locations(callers, "caller")...),
		Frames:    []string{top},
	}
	if len(lines) > 0 {
		// A dependency's hot function is not the user's to optimise: the
		// lever is how often the service calls it and how it is set up.
		var whose rules.Fact
		f.Fix, whose, _ = rules.Advise(facts.Get(pass.Facts, facts.Owners), lines[0].Frame, f.Fix,
			"Call it less (cache its results, batch, or skip work whose result is unused), look for a configuration that makes it cheaper, or choose another library or component for this path; a faster version of the code itself is its maintainers' change.")
		f.Evidence = append(f.Evidence, whose)
	}
	if unknownLeaf >= unsymbolizedNote {
		f.Evidence = append(f.Evidence, rules.Share("CPU in unsymbolized frames, left out of the shares", unknownLeaf))
		f.Caveats = append(f.Caveats, "Part of the CPU could not be named: "+frames.SymbolizeAdvice+".")
	}
	for _, fn := range names[1:min(4, len(names))] {
		s := float64(byFunc[fn]) / float64(known)
		if s >= minShare/2 {
			f.Evidence = append(f.Evidence, rules.Share("next: "+rules.ShortFunc(fn), s))
		}
	}
	f.Claim = &rules.Claim{Level: rules.LevelCode, CPU: func(s evidence.Sample) bool {
		fr := appFrame(s)
		return fr != nil && fr.Func == top && unexplained(s)
	}}
	pass.Report(f)
	return nil
}

// pgoAdvice suggests profile-guided optimisation when the target's build
// is known and did not use it: the CPU profile in hand is its input.
func pgoAdvice(ev *evidence.Evidence) string {
	b := ev.Build()
	if b == nil || b.PGO != "" || bundle.GoMinor(b.GoVersion) < 21 {
		return ""
	}
	return " The build does not use profile-guided optimisation: save a CPU profile taken under production load as default.pgo in the main package and rebuild (Go >= 1.21 uses it by default); it typically saves 2-14% of CPU by inlining and devirtualising the hot calls."
}

// reportLibrary reports the hottest native library family whose callers
// are not named, when it outweighs every named function; it returns
// whether it did.
func reportLibrary(pass *rules.Pass, cpu *evidence.Stacks, byLib []int64, byFunc map[string]int64, known int64, unknownLeaf float64) bool {
	best := -1
	for i, v := range byLib {
		if v > 0 && (best < 0 || v > byLib[best]) {
			best = i
		}
	}
	if best < 0 {
		return false
	}
	for _, v := range byFunc {
		if v >= byLib[best] {
			return false
		}
	}
	share := float64(byLib[best]) / float64(known)
	if share < minShare {
		return false
	}
	lib := frames.NativeLibraries[best]
	sev := rules.Info
	if share >= 0.15 {
		sev = rules.Low
	}
	f := rules.Finding{
		Severity:    sev,
		Impact:      float64(byLib[best]) / float64(cpu.Total) / 2, // of all CPU, as other rules' impacts are
		Resource:    "cpu",
		ImpactBasis: "half of the CPU in the library: assumes its use can be halved",
		Summary:     fmt.Sprintf("%s uses %s of CPU, called from code perf could not name", lib.Name, human.Percent(share)),
		Evidence: []rules.Fact{
			rules.Share("CPU in the library with no named caller", share),
			rules.Text("library functions", strings.Join(cpu.Matched(lib.Match, 5), ", ")),
		},
		Fix:     lib.Fix + " To see which code calls it: " + frames.SymbolizeAdvice + ".",
		Caveats: []string{"The callers are not named, so the share is the library's own time; the code that calls it may cost more."},
		Frames:  cpu.Matched(lib.Match, 12),
	}
	if unknownLeaf >= unsymbolizedNote {
		f.Evidence = append(f.Evidence, rules.Share("CPU in unsymbolized frames, left out of the shares", unknownLeaf))
	}
	pass.Report(f)
	return true
}
