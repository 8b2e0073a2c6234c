package lib007

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/perfdoctor/perfdoctor/facts"

	"github.com/google/pprof/profile"

	"github.com/perfdoctor/perfdoctor/evidence"
	"github.com/perfdoctor/perfdoctor/internal/testprof"
	"github.com/perfdoctor/perfdoctor/rules"
)

var paths = []string{"/api/v1/users/42/orders", "/api/v1/items/abc-123", "/healthz", "/api/v2/users/7/profile"}

var matched int

// routePerCall compiles its pattern on every request.
func routePerCall() {
	for _, p := range paths {
		if regexp.MustCompile(`^/api/v[0-9]+/users/([0-9]+)/(orders|profile)$`).MatchString(p) {
			matched++
		}
	}
}

var userRoute = regexp.MustCompile(`^/api/v[0-9]+/users/([0-9]+)/(orders|profile)$`)

// routeCompiled uses the package-level expression.
func routeCompiled() {
	for _, p := range paths {
		if userRoute.MatchString(p) {
			matched++
		}
	}
}

func run(profiles map[evidence.Kind]*profile.Profile) rules.Result {
	return rules.Run(facts.New(testprof.Evidence(profiles)), []*rules.Rule{Rule})
}

func TestFiresOnCompilePerRequest(t *testing.T) {
	cpu := testprof.CPU(t, 2*time.Second, 1, routePerCall)
	allocs := testprof.Allocs(t, 2000, routePerCall)
	res := run(map[evidence.Kind]*profile.Profile{evidence.CPU: cpu, evidence.Allocs: allocs})
	if len(res.Findings) != 1 {
		t.Fatalf("want a regexp-compile-hot finding, got %d (%v)", len(res.Findings), res.NotChecked)
	}
	f := res.Findings[0]
	if f.Impact < 0.2 || f.Severity != rules.High {
		t.Errorf("impact %.2f severity %s: want high", f.Impact, f.Severity)
	}
	if !f.RemovesWork {
		t.Error("compiled once, a regexp is compiled no more per request: a floor and no top")
	}
	if len(f.Locations) == 0 || !strings.Contains(f.Locations[0].Function, "routePerCall") {
		t.Errorf("locations %+v", f.Locations)
	}
	if !strings.Contains(f.Fix, "routePerCall") || !strings.Contains(f.Fix, "package-level") {
		t.Errorf("fix %q", f.Fix)
	}
	var allocShare float64
	for _, e := range f.Evidence {
		if strings.HasPrefix(e.Name, "objects allocated") {
			allocShare = e.Num
		}
	}
	if allocShare < 0.3 {
		t.Errorf("compile share of allocated objects %.2f, want most of them", allocShare)
	}
}

func TestSilentWithPackageLevelRegexp(t *testing.T) {
	cpu := testprof.CPU(t, 2*time.Second, 1, routeCompiled)
	if res := run(map[evidence.Kind]*profile.Profile{evidence.CPU: cpu}); len(res.Findings) != 0 {
		t.Fatalf("package-level regexp reported: %+v", res.Findings[0])
	}
}

func stack(v int64, funcs ...string) testprof.Stack { return testprof.Stack{Value: v, Funcs: funcs} }

func cpuOnly(stacks ...testprof.Stack) map[evidence.Kind]*profile.Profile {
	return map[evidence.Kind]*profile.Profile{evidence.CPU: testprof.Build(stacks...)}
}

func TestMatchStringConvenienceIsNamed(t *testing.T) {
	res := run(cpuOnly(
		stack(60, "regexp/syntax.(*parser).push", "regexp/syntax.parse", "regexp/syntax.Parse", "regexp.compile", "regexp.Compile", "regexp.MatchString", "main.(*filter).allow", "main.handle"),
		stack(940, "main.handle"),
	))
	if len(res.Findings) != 1 || !strings.Contains(res.Findings[0].Fix, "regexp.MatchString") || res.Findings[0].Locations[0].Function != "main.(*filter).allow" {
		t.Fatalf("MatchString per call: %+v", res.Findings)
	}
}

func TestJVMPatternCompile(t *testing.T) {
	res := run(cpuOnly(
		stack(80, "java.util.regex.Pattern.expr", "java.util.regex.Pattern.compile", "java.util.regex.Pattern.<init>", "java.util.regex.Pattern.compile",
			"java.lang.String.replaceAll", "com.acme.login.TokenSanitizer.clean", "com.acme.login.LoginController.login"),
		stack(920, "com.acme.login.LoginController.login"),
	))
	if len(res.Findings) != 1 || res.Findings[0].Locations[0].Function != "com.acme.login.TokenSanitizer.clean" {
		t.Fatalf("JVM Pattern.compile: %+v", res.Findings)
	}
}

func TestSilentAtInitAndBelowThreshold(t *testing.T) {
	res := run(cpuOnly(
		stack(200, "regexp/syntax.Parse", "regexp.compile", "regexp.MustCompile", "main.init", "runtime.doInit1", "runtime.doInit", "runtime.main"),
		stack(100, "regexp.compile", "regexp.MustCompile", "github.com/acme/svc/route.init.0", "runtime.doInit1"),
		stack(20, "regexp.compile", "regexp.MustCompile", "main.handle"),
		// matching with a compiled program uses regexp/syntax at match time: not compilation.
		stack(100, "regexp/syntax.(*Inst).MatchRunePos", "regexp.(*Regexp).tryBacktrack", "regexp.(*Regexp).doExecute", "regexp.(*Regexp).MatchString", "main.handle"),
		stack(580, "main.handle"),
	))
	if len(res.Findings) != 0 {
		t.Fatalf("init-time / 2%% compile reported: %+v", res.Findings[0])
	}
}

func TestAllocsLowerTheThreshold(t *testing.T) {
	cpu := testprof.Build(
		stack(20, "regexp/syntax.Parse", "regexp.compile", "regexp.MustCompile", "main.handle"),
		stack(980, "main.handle"),
	)
	// An allocs profile in which compilation makes a third of the objects.
	allocs := testprof.Build(
		stack(100, "runtime.mallocgc", "regexp/syntax.(*parser).newRegexp", "regexp/syntax.Parse", "regexp.compile", "regexp.MustCompile", "main.handle"),
		stack(200, "runtime.mallocgc", "main.handle"),
	)
	allocs.SampleType = []*profile.ValueType{{Type: "alloc_objects", Unit: "count"}, {Type: "alloc_space", Unit: "bytes"}}
	res := run(map[evidence.Kind]*profile.Profile{evidence.CPU: cpu, evidence.Allocs: allocs})
	if len(res.Findings) != 1 || res.Findings[0].Severity != rules.Low {
		t.Fatalf("2%% CPU + 33%% of objects: %+v", res.Findings)
	}
}

func TestInitFrames(t *testing.T) {
	for fn, want := range map[string]bool{
		"main.init":                              true,
		"github.com/acme/svc/route.init.0":       true,
		"github.com/acme/svc/route.init.0.func1": true,
		"github.com/acme/svc/route.init.func2":   true,
		"runtime.doInit1":                        true,
		"java.util.regex.Pattern.<clinit>":       true,
		"compress/flate.(*compressor).init":      false,
		"main.initialize":                        false,
		"main.handle":                            false,
	} {
		if initFrames(fn) != want {
			t.Errorf("initFrames(%q) = %v", fn, !want)
		}
	}
}

// A native service compiling its PCRE pattern per request, seen through perf.
func TestNativePCRECompile(t *testing.T) {
	cpu := testprof.Build(
		testprof.Stack{Value: 400, Funcs: []string{"compile_branch", "pcre2_compile_8", "match_route", "handle", "main"}},
		testprof.Stack{Value: 100, Funcs: []string{"pcre2_match_8", "match_route", "handle", "main"}},
		testprof.Stack{Value: 500, Funcs: []string{"handle", "main"}},
	)
	res := rules.Run(facts.New(testprof.Evidence(map[evidence.Kind]*profile.Profile{evidence.CPU: cpu})), []*rules.Rule{Rule})
	if len(res.Findings) != 1 {
		t.Fatalf("want a finding: %+v", res)
	}
	f := res.Findings[0]
	if !strings.Contains(f.Summary, "40% of CPU") || len(f.Locations) == 0 || f.Locations[0].Function != "match_route" {
		t.Errorf("%q %+v", f.Summary, f.Locations)
	}
}
