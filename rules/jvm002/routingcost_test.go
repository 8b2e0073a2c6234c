package jvm002

import (
	"strings"
	"testing"

	"github.com/perfdoctor/perfdoctor/facts"

	"github.com/google/pprof/profile"

	"github.com/perfdoctor/perfdoctor/evidence"
	"github.com/perfdoctor/perfdoctor/formats/jfr"
	"github.com/perfdoctor/perfdoctor/internal/testprof"
	"github.com/perfdoctor/perfdoctor/rules"
)

func stack(v int64, funcs ...string) testprof.Stack { return testprof.Stack{Value: v, Funcs: funcs} }

func run(cpu *profile.Profile) rules.Result {
	return rules.Run(facts.New(testprof.Evidence(map[evidence.Kind]*profile.Profile{evidence.CPU: cpu})), []*rules.Rule{Rule})
}

func TestFiresOnAntPathMatcherPerRequest(t *testing.T) {
	res := run(testprof.Build(
		stack(300, "org.springframework.util.AntPathMatcher.tokenizePath", "org.springframework.util.AntPathMatcher.doMatch",
			"org.springframework.util.AntPathMatcher.match", "com.acme.api.Router.route", "com.acme.api.Server.handle"),
		stack(700, "com.acme.api.Server.render", "com.acme.api.Server.handle"),
	))
	if len(res.Findings) != 1 {
		t.Fatalf("want one finding, got %+v", res)
	}
	f := res.Findings[0]
	if f.Impact < 0.2 || !strings.Contains(f.Summary, "mostly AntPathMatcher (called from com.acme.api.Router.route)") {
		t.Errorf("impact %.2f summary %q", f.Impact, f.Summary)
	}
}

func TestSilentWithRouteTable(t *testing.T) {
	res := run(testprof.Build(
		stack(30, "java.util.HashMap.get", "com.acme.api.Router.route", "com.acme.api.Server.handle"),
		stack(970, "com.acme.api.Server.render", "com.acme.api.Server.handle"),
	))
	if len(res.Findings) != 0 {
		t.Fatalf("reported %+v", res.Findings[0])
	}
}

// In async-profiler's samples the stacks go down into the VM that started
// the thread: the caller named is the Java code, never a VM frame, and
// the finding says whose samples it measured.
func TestAsyncProfilerStacks(t *testing.T) {
	cpu := testprof.Build(
		stack(300, "org.springframework.util.AntPathMatcher.doMatch", "org.springframework.util.AntPathMatcher.match",
			"com.acme.api.Router.route", "com.acme.api.Server.handle", "JavaCalls::call_helper", "thread_native_entry"),
		stack(200, "org.springframework.util.AntPathMatcher.match", "JavaCalls::call_helper", "thread_native_entry"),
		stack(500, "com.acme.api.Server.render", "com.acme.api.Server.handle", "JavaCalls::call_helper", "thread_native_entry"),
	)
	libjvm := &profile.Mapping{ID: 2, File: "libjvm.so"}
	cpu.Mapping = append(cpu.Mapping, libjvm)
	for _, l := range cpu.Location {
		if fn := l.Line[0].Function.Name; fn == "JavaCalls::call_helper" || fn == "thread_native_entry" {
			l.Mapping = libjvm
		}
	}
	ev := testprof.Evidence(map[evidence.Kind]*profile.Profile{evidence.CPU: cpu})
	ev.JVM = &jfr.Summary{Profiler: "async-profiler 4.6"}
	res := rules.Run(facts.New(ev), []*rules.Rule{Rule})
	if len(res.Findings) != 1 {
		t.Fatalf("want one finding, got %+v", res)
	}
	f := res.Findings[0]
	if len(f.Locations) != 1 || f.Locations[0].Function != "com.acme.api.Router.route" {
		t.Errorf("callers %+v", f.Locations)
	}
	if !strings.Contains(f.ImpactBasis, "async-profiler 4.6 samples") {
		t.Errorf("basis %q", f.ImpactBasis)
	}
}
