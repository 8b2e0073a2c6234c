// Package jvm002 detects a web framework's request mapping dominating
// CPU (finding class framework-routing-cost).
package jvm002

import (
	"fmt"

	"github.com/perfdoctor/perfdoctor/facts"

	"github.com/perfdoctor/perfdoctor/evidence"
	"github.com/perfdoctor/perfdoctor/internal/human"
	"github.com/perfdoctor/perfdoctor/rules"
)

// Rule is JVM002.
var Rule = &rules.Rule{
	ID:    "JVM002",
	Class: "framework-routing-cost",
	Doc: rules.Doc{
		Title: "Request routing (path pattern matching) takes a large share of CPU",
		Text: `Frameworks that map a request to its handler by trying path patterns one by
one (Spring's AntPathMatcher, the handler-method lookup of Spring MVC,
JAX-RS template matching) tokenise the path and each pattern and compare
them per request; with dozens of patterns, wildcards and path variables that
can cost more than the handler itself.`,
		Evidence: `CPU share of samples under org.springframework.util.AntPathMatcher, Spring
MVC's handler mapping (AbstractHandlerMethodMapping, RequestMappingInfo,
PatternsRequestCondition, PathPattern, UrlPathHelper) and Jersey's routing
(org.glassfish.jersey.uri, org.glassfish.jersey.server.internal.routing).
The code that called the matcher is named. With async-profiler's samples
(collect --jvm) the share also holds the VM's work under the matcher
(allocation slow paths, native code) and every thread of the JVM counts in
the whole. Reports from 5% of CPU.`,
		Fix: `Resolve routes from a precomputed table: an exact-match map for fixed paths
first, then a trie or a small list of patterns grouped by their first literal
segment, built once at start-up. In Spring MVC use PathPatternParser (the
default from Spring 6; spring.mvc.pathmatch.matching-strategy=path-pattern-parser
in Boot 2.6+) instead of AntPathMatcher, and give hot endpoints literal paths.
Never call AntPathMatcher.match in a loop over all routes per request.`,
		Before: `for (Route r : routes)                      // per request
    if (matcher.match(r.pattern(), path)) return r.handler();`,
		After: `Handler h = exact.get(path);                // built once at start-up
if (h == null) h = trie.lookup(path);`,
		Caveats: caveat,
		Since:   "0.2",
		Refs: []string{
			"https://spring.io/blog/2020/06/30/url-matching-with-pathpattern-in-spring-mvc",
			"https://docs.spring.io/spring-framework/docs/current/javadoc-api/org/springframework/web/util/pattern/PathPatternParser.html",
		},
	},
	Needs: []rules.Input{rules.CPU},
	Facts: []facts.Key{facts.CPUStacks, facts.SystemFrames},
	Check: check,
}

const caveat = "A table built at start-up must be rebuilt when routes are registered at run time; keep the framework's matching for rare, dynamic routes."

// Frames is the request-mapping family.
var Frames = evidence.FuncPrefix(
	"org.springframework.util.AntPathMatcher", "org/springframework/util/AntPathMatcher",
	"org.springframework.web.servlet.handler.AbstractHandlerMethodMapping",
	"org.springframework.web.servlet.mvc.method.RequestMappingInfo",
	"org.springframework.web.servlet.mvc.condition.PatternsRequestCondition",
	"org.springframework.web.servlet.mvc.condition.PathPatternsRequestCondition",
	"org.springframework.web.util.pattern.", "org.springframework.web.util.UrlPathHelper",
	"org.springframework.web.reactive.result.method.AbstractHandlerMethodMapping",
	"org.glassfish.jersey.uri.", "org.glassfish.jersey.server.internal.routing.",
)

var antPathMatcher = evidence.FuncPrefix("org.springframework.util.AntPathMatcher", "org/springframework/util/AntPathMatcher")

const (
	minShare    = 0.05
	recoverable = 0.8 // a table lookup costs a fraction of pattern matching
)

func check(pass *rules.Pass) error {
	if !pass.EnoughCPU() {
		return nil
	}
	cpu := facts.Get(pass.Facts, facts.CPUStacks)
	share := cpu.Share(Frames)
	if share < minShare {
		return nil
	}
	ant := cpu.Share(antPathMatcher)
	system := facts.Get(pass.Facts, facts.SystemFrames) // the VM's and the kernel's, in async-profiler's samples
	caller := cpu.CallerOf(Frames, func(fn string) bool { return rules.IsApplication(fn) && !Frames(fn) && !system(fn) })
	sites := cpu.TopSites(5, func(s evidence.Sample) *evidence.Frame { return caller(s) })
	impact := share * recoverable
	f := rules.Finding{
		Severity:    rules.SeverityFor(impact),
		Impact:      impact,
		Resource:    "cpu",
		ImpactBasis: "share of CPU matching request paths against patterns" + measuredBy(pass.Evidence) + "; a precomputed table needs a fraction of it, so about 80%",
		Summary:     fmt.Sprintf("Request routing uses %s of CPU", human.Percent(share)),
		Evidence: []rules.Fact{
			rules.Share("request mapping share of CPU", share),
			rules.Share("org.springframework.util.AntPathMatcher share of CPU", ant),
		},
		Fix:       pass.Rule.Doc.Fix,
		Example:   pass.Rule.Doc.Before + "\n->\n" + pass.Rule.Doc.After,
		Caveats:   []string{caveat},
		Locations: rules.Locations(sites, "code matching request paths"),
		Frames:    cpu.Matched(Frames, 12),
	}
	if ant >= share/2 {
		f.Summary += ", mostly AntPathMatcher"
	}
	if len(sites) > 0 {
		f.Summary += " (called from " + rules.ShortFunc(sites[0].Func) + ")"
	}
	f.Claim = &rules.Claim{Level: rules.LevelCode, CPU: cpu.Has(Frames), Regrade: rules.SeverityFor}
	pass.Report(f)
	return nil
}

// measuredBy says when the samples came from a profiler that sees the VM's
// work under the matcher (allocation, regex compilation in native code)
// besides its Java frames.
func measuredBy(ev *evidence.Evidence) string {
	if ev.JVM != nil && ev.JVM.Profiler != "" {
		return " (" + ev.JVM.Profiler + " samples, the VM's work under it included)"
	}
	return ""
}
