// Package cpu001 names the program's dominant path when no specific rule
// explains where the CPU goes (finding class hot-function): the widest
// subtree rooted in the program's own code, from its entry to where the
// cost spreads, and what it calls there.
package cpu001

import (
	"fmt"
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
		Title: "The program's dominant path: where its CPU goes",
		Text: `The fallback: when no specific rule explains the CPU, perfdoctor still points
at the place to look, as an engineer reads a profile: not the hottest leaf
(a sort's comparison, a hash, a getter), which is the cost of what the code
above it does, but the widest subtree rooted in the program's own code. Its
entry is where a unit of work starts in the program (a handler, a worker's
loop); the chain follows the one callee that holds most of the cost down to
where the cost spreads; what that function calls is where the time goes.
The question to ask of the path is whether its work is needed per request.`,
		Evidence: `The CPU profile, minus the samples that other findings already explain. The
program's own code is the main module's for Go (the executable's build info,
else the profiles' file paths), the main binary's for a native program, Java
classes outside the JDK and the common libraries and frameworks for the JVM
(a server run by its own command line, as Jetty's start.jar or Tomcat's
Bootstrap, is the program); when its widest subtree holds under 5% of CPU, the
path starts in the application code it runs on. Each sample's entry is its
outermost own frame; the entry with the most samples roots the path, and the
chain continues while one callee holds 75% of its caller's samples (a push on
the pushgateway keeps 98-99.9% from call to call down to Gatherers.Gather,
whose callees then hold 49% and 47%). Reported from 5% of CPU at severity
info, or low from 15%: every service has a dominant path, usually its handler
doing its job, so this finding is where to look, never an alarm (healthy
servers' paths hold 23-79%: ZooKeeper's doIO 27%, Jetty's request 70%, Tomcat's
79%). Frames perf could not symbolize ("[unknown]") are never named: samples
ending in them with no named frame are left out of the shares, and from 5% the
report says how much was unnamed and how to name it. When no function of the
program is named above a native library family (OpenSSL, memcpy/malloc, PCRE,
protobuf and other serializers) and the library outweighs every named
function, the library is reported with its own prescription.`,
		Fix: `Read the path from its entry to where the cost spreads, then the lines named: is
the work the path does needed for every request? Work that could be done once,
cached or kept up to date incrementally is the largest saving; then work that
grows with input size (nested loops over slices, a linear search that wants a
map or set) and repeated conversions.`,
		Before:  `for _, a := range xs { for _, b := range ys { if a == b { ... } } }   // O(n*m)`,
		After:   `set := make(map[T]struct{}, len(ys)); ...; if _, ok := set[a]; ok { ... }`,
		Caveats: `The estimated gain assumes the work under the path's end can be made about twice as fast; the real figure depends on what the path does, and is all of it when the work need not be done per request.`,
		Since:   "0.1",
	},
	Needs:    []rules.Input{rules.CPU},
	Fallback: true,
	Facts:    []facts.Key{facts.CPUStacks, facts.Owners, facts.SystemFrames, facts.Program},
	Check:    check,
}

const (
	minShare = 0.05
	// lowShare is the share from which the path is graded low, not info.
	lowShare = 0.15
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
	// What an earlier finding claims is its cost, whatever frames it named
	// (a database's table scan claims the executor's scan node around them).
	var claims []func(evidence.Sample) bool
	for _, f := range pass.Earlier {
		if f.Claim != nil && f.Claim.CPU != nil && f.Resource == "cpu" {
			claims = append(claims, f.Claim.CPU)
		}
	}
	unexplained := func(s evidence.Sample) bool {
		if isExplained(s) {
			return false
		}
		for _, claimed := range claims {
			if claimed(s) {
				return false
			}
		}
		return true
	}
	// Kernel and shared-library frames (perf, folded stacks) are calls the
	// code above them made, as the Go standard library's are.
	// Unsymbolized frames ("[unknown]") are never named, and samples with
	// no named frame are left out of the shares, which are computed on
	// what is known.
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
	prog := facts.Get(pass.Facts, facts.Program)
	path := prog.PathOf(cpu, unexplained)
	if path == nil {
		return nil
	}
	scale := float64(cpu.Total) / float64(known) // shares of the named CPU
	share := path.Share * scale
	if share < minShare {
		return nil
	}
	in := func(s evidence.Sample) bool { return unexplained(s) && path.Under(s) }
	endPos := len(path.Chain) - 1
	// at picks the frame of a sample under the path at a chain position.
	at := func(pos int) func(evidence.Sample) *evidence.Frame {
		return func(s evidence.Sample) *evidence.Frame {
			if !unexplained(s) {
				return nil
			}
			return path.Frame(s, pos)
		}
	}
	end := path.Last()
	lines := cpu.TopSites(5, at(endPos))
	callerPos := endPos
	for callerPos > 0 && !path.Chain[callerPos].Own {
		callerPos--
	}
	var calls []evidence.Site
	if callerPos != endPos {
		calls = cpu.TopSites(2, at(callerPos))
	}
	sev := rules.Info
	if share >= lowShare {
		sev = rules.Low
	}
	summary := fmt.Sprintf("The dominant path %s holds %s of CPU", path.ChainText(), human.Percent(share))
	if len(path.Chain) == 1 {
		summary = fmt.Sprintf("%s holds %s of CPU", path.Name(end.Func), human.Percent(share))
		if len(path.Callees) == 0 {
			summary += " in its own code"
		}
	}
	if len(path.Callees) > 0 {
		var parts []string
		for _, c := range path.Callees[:min(3, len(path.Callees))] {
			parts = append(parts, path.Name(c.Func)+" "+human.Percent(c.Share*scale))
		}
		summary += "; " + path.Name(end.Func) + " spreads it over " + strings.Join(parts, ", ")
	}
	if !path.Own {
		summary += " (the program's own code holds too little CPU to start from; the path starts in the code it runs on)"
	}
	f := rules.Finding{
		Severity:    sev,
		Impact:      path.End * scale / 2,
		Resource:    "cpu",
		ImpactBasis: "half of the CPU under the path's end: assumes the work there can be made about twice as fast",
		Summary:     summary,
		Evidence: []rules.Fact{
			rules.Text("dominant path", path.Text()),
			rules.Share("CPU under the path's entry ("+path.Name(path.Entry())+")", share),
			rules.Share("CPU under the path's end ("+path.Name(end.Func)+")", path.End*scale),
		},
		Fix:       pass.Rule.Doc.Fix + pgoAdvice(pass.Evidence),
		Locations: append(rules.Locations(lines, "hot line"), rules.Locations(calls, "the program's call")...),
		Frames:    []string{end.Func},
	}
	// Where the cost spreads into the program's own functions, the
	// costliest one's own lines come first: its loop, not the call to it.
	if len(path.Callees) > 0 && path.Callees[0].Own {
		top := path.Callees[0].Func
		inTop := cpu.First(func(fn string) bool { return fn == top })
		calleeLines := cpu.TopSites(3, func(s evidence.Sample) *evidence.Frame {
			if !in(s) {
				return nil
			}
			return inTop(s)
		})
		f.Locations = append(rules.Locations(calleeLines, "hot line in "+path.Name(top)), f.Locations...)
		f.Frames = append(f.Frames, top)
	}
	// The program's frame that calls into a dependency decides whose
	// change the fix is: the leaves below it are the cost of the call.
	site := lines
	if len(calls) > 0 {
		site = calls
		caller, callee := path.Chain[callerPos], path.Chain[callerPos+1]
		down := ""
		if callee.Func != end.Func {
			down = " (down to " + path.Name(end.Func) + ", where it spreads)"
		}
		codeFix := fmt.Sprintf("%s calls %s, under which %s of CPU goes%s: the change is in %s, the program's code. Is the call needed for every request? "+
			"Do it once or cache its result, batch it, skip it when its result is unused, or configure the library to do less; a faster %s is its maintainers' change.",
			rules.SiteName(calls[0].Frame), path.Name(callee.Func), human.Percent(callee.Share*scale), down, path.Name(caller.Func), path.Name(callee.Func))
		f.Fix = codeFix + pgoAdvice(pass.Evidence)
	}
	if len(site) > 0 {
		var whose rules.Fact
		f.Fix, whose, _ = rules.Advise(facts.Get(pass.Facts, facts.Owners), site[0].Frame, f.Fix,
			"Call it less (cache its results, batch, or skip work whose result is unused), look for a configuration that makes it cheaper, or choose another library or component for this path; a faster version of the code itself is its maintainers' change.")
		f.Evidence = append(f.Evidence, whose)
	}
	if unknownLeaf >= unsymbolizedNote {
		f.Evidence = append(f.Evidence, rules.Share("CPU in unsymbolized frames, left out of the shares", unknownLeaf))
		f.Caveats = append(f.Caveats, "Part of the CPU could not be named: "+frames.SymbolizeAdvice+".")
	}
	f.Claim = &rules.Claim{Level: rules.LevelCode, CPU: in}
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
