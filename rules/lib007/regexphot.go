// Package lib007 detects regular expressions compiled on the hot path
// instead of once (finding class regexp-compile-hot).
package lib007

import (
	"fmt"

	"github.com/perfdoctor/perfdoctor/facts"

	"github.com/perfdoctor/perfdoctor/evidence"
	"github.com/perfdoctor/perfdoctor/facts/frames"
	"github.com/perfdoctor/perfdoctor/internal/human"
	"github.com/perfdoctor/perfdoctor/rules"
)

// Rule is LIB007.
var Rule = &rules.Rule{
	ID:    "LIB007",
	Class: "regexp-compile-hot",
	Doc: rules.Doc{
		Title: "Regular expressions are compiled on the hot path",
		Text: `Compiling a regular expression parses it, simplifies it and builds a program,
allocating dozens of objects; matching with the compiled program is cheap by
comparison. regexp.MustCompile inside a handler, or the convenience functions
regexp.MatchString and regexp.Match (which compile their pattern on every
call), pay the compilation per request. Java's String.matches, replaceAll and
split do the same through Pattern.compile.`,
		Evidence: `CPU share of samples in the compile path: regexp.Compile, MustCompile,
CompilePOSIX, regexp.compile and compileOnePass, regexp/syntax.Parse,
Compile, Simplify and the parser and compiler methods (match-time
regexp/syntax functions are not counted), and java.util.regex.Pattern.compile
and its constructor for JVM profiles, PCRE's pcre2_compile, pcre_compile,
pcre2_jit_compile and pcre_study in native perf stacks. Compilation under package initialisation
(runtime.doInit, init functions, Java <clinit>) or sync.Once is excluded. With
an allocs profile, the share of objects allocated by the compile path is
added: per-request compilation shows there too. Reports from 3% of CPU, or
from 1% when the compile path allocates 10% or more of all objects.`,
		Fix: `Compile once: a package-level var re := regexp.MustCompile(...) (or a
static final Pattern in Java) and use its methods; replace regexp.MatchString
with a compiled regexp's MatchString. For patterns built at run time, cache
compiled expressions by pattern. Simple checks often need no regexp at all
(strings.HasPrefix, strings.Cut).`,
		Before: `func valid(s string) bool { return regexp.MustCompile(` + "`^[a-z0-9-]+$`" + `).MatchString(s) }`,
		After: `var slug = regexp.MustCompile(` + "`^[a-z0-9-]+$`" + `)
func valid(s string) bool { return slug.MatchString(s) }`,
		Caveats: caveat,
		Since:   "0.1",
		Refs:    []string{"https://pkg.go.dev/regexp#MustCompile"},
	},
	Needs: []rules.Input{rules.CPU},
	Uses:  []rules.Input{rules.Allocs},
	Facts: []facts.Key{facts.AllocStacks, facts.CPUStacks, facts.SystemFrames, facts.WindowAllocs},
	Check: check,
}

var (
	goCompile = evidence.FuncPrefix(
		"regexp.Compile", "regexp.MustCompile", "regexp.compile", // compile, compileOnePass; CompilePOSIX, MustCompilePOSIX
		"regexp/syntax.Parse", "regexp/syntax.Compile", "regexp/syntax.(*parser).", "regexp/syntax.(*compiler).",
		"regexp/syntax.(*Regexp).Simplify", "regexp/syntax.(*Regexp).CapNames", "regexp/syntax.(*Regexp).MaxCap",
	)
	javaCompile = evidence.FuncPrefix(
		"java.util.regex.Pattern.compile", "java.util.regex.Pattern.<init>",
		"java/util/regex/Pattern.compile", "java/util/regex/Pattern.<init>",
	)
	// pcreCompile is PCRE's compile path in native code (perf stacks).
	pcreCompile = evidence.FuncPrefix("pcre2_compile", "pcre_compile", "pcre2_jit_compile", "pcre_study")
	// Frames is the compile path.
	Frames = evidence.Any(goCompile, javaCompile, pcreCompile)

	// convenience functions that compile per call.
	convenience = evidence.FuncPrefix("regexp.MatchString", "regexp.Match", "regexp.MatchReader")

	// initFrames run once: compiling under them is not per request.
	initFrames = frames.Startup
)

const (
	caveat = "A pattern that differs per request cannot be compiled at start-up: cache it by pattern with a bounded size."
	fix    = "Compile once: a package-level var (re = regexp.MustCompile(...), a static final Pattern in Java, pcre2_compile at start-up in C) and call its methods; " +
		"replace regexp.MatchString/Match with a compiled regexp's methods; cache patterns built at run time by pattern; " +
		"simple checks often need no regexp at all (strings.HasPrefix, strings.Cut)."
)

const (
	minShare      = 0.03
	minShareAlloc = 0.01
	minAllocShare = 0.10
)

func check(pass *rules.Pass) error {
	if !pass.EnoughCPU() {
		return nil
	}
	cpu := facts.Get(pass.Facts, facts.CPUStacks)
	in, atInit := cpu.Has(Frames), cpu.Has(initFrames)
	hot := func(s evidence.Sample) bool { return in(s) && !atInit(s) }
	share := cpu.ShareWhere(hot)

	allocShare := -1.0
	if pass.Has(rules.Allocs) {
		allocs := facts.Get(pass.Facts, facts.WindowAllocs).Profile
		if st := evidence.NewStacks(allocs, "alloc_objects"); st != nil {
			ain, ainit := st.Has(Frames), st.Has(initFrames)
			allocShare = st.ShareWhere(func(s evidence.Sample) bool { return ain(s) && !ainit(s) })
		}
	}
	if share < minShare && !(share >= minShareAlloc && allocShare >= minAllocShare) {
		return nil
	}
	conv := cpu.Has(convenience)
	convShare := cpu.ShareWhere(func(s evidence.Sample) bool { return hot(s) && conv(s) })

	// The caller: Go application code, or for JVM frames the first frame
	// outside the JDK.
	goCaller := cpu.CallerOf(evidence.Any(goCompile, convenience), rules.IsApplication)
	javaCaller := cpu.CallerOf(javaCompile, evidence.IsJavaApp)
	system := facts.Get(pass.Facts, facts.SystemFrames)
	nativeCaller := cpu.CallerOf(pcreCompile, func(fn string) bool { return !system(fn) && !frames.Unsymbolized(fn) })
	sites := cpu.TopSites(5, func(s evidence.Sample) *evidence.Frame {
		if !hot(s) {
			return nil
		}
		if f := goCaller(s); f != nil {
			return f
		}
		if f := javaCaller(s); f != nil {
			return f
		}
		return nativeCaller(s)
	})

	impact := share
	f := rules.Finding{
		Severity:    rules.SeverityFor(impact),
		Impact:      impact,
		RemovesWork: true, // compiled once, it is compiled no more per request
		Resource:    "cpu",
		ImpactBasis: "share of CPU compiling regular expressions outside initialisation; compiling once removes all of it (and the garbage it makes)",
		Summary:     fmt.Sprintf("Regular expressions are compiled on the hot path: %s of CPU", human.Percent(share)),
		Evidence:    []rules.Fact{rules.Share("regexp compilation share of CPU", share)},
		Fix:         fix,
		Example:     pass.Rule.Doc.Before + "\n->\n" + pass.Rule.Doc.After,
		Caveats:     []string{caveat},
		Locations:   rules.Locations(sites, "code compiling a regexp per call"),
		Frames:      cpu.Matched(Frames, 12),
	}
	if convShare > 0 {
		f.Evidence = append(f.Evidence, rules.Share("via regexp.MatchString/Match (compile per call)", convShare))
	}
	if allocShare >= 0 {
		f.Evidence = append(f.Evidence, rules.Share("objects allocated by regexp compilation (allocs profile)", allocShare))
	} else {
		f.Caveats = append(f.Caveats, "No allocs profile: the objects allocated by compilation were not counted.")
	}
	if len(sites) > 0 {
		site := rules.ShortFunc(sites[0].Func)
		f.Summary += " (in " + site + ")"
		how := "compiles a regular expression on every call"
		if convShare >= share/2 {
			how = "calls regexp.MatchString/Match, which compile the pattern on every call"
		}
		f.Fix = fmt.Sprintf("%s %s. %s", site, how, fix)
	}
	// Compiling allocates the parse tree and program: those bytes, and
	// the GC they drive, are this finding's.
	aat := facts.Get(pass.Facts, facts.AllocStacks)
	ain, ainit := aat.Has(Frames), aat.Has(initFrames)
	f.Claim = &rules.Claim{Level: rules.LevelCode, CPU: hot, Allocs: func(s evidence.Sample) bool { return ain(s) && !ainit(s) }, Regrade: rules.SeverityFor}
	pass.Report(f)
	return nil
}
