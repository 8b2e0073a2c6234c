package jvm001

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/perfdoctor/perfdoctor/facts"

	"github.com/google/pprof/profile"

	"github.com/perfdoctor/perfdoctor/evidence"
	"github.com/perfdoctor/perfdoctor/formats/jfr"
	"github.com/perfdoctor/perfdoctor/internal/testprof"
	"github.com/perfdoctor/perfdoctor/rules"
)

func stack(v int64, funcs ...string) testprof.Stack { return testprof.Stack{Value: v, Funcs: funcs} }

var (
	// A login handler that parses a missing header and swallows the exception.
	throwing = testprof.Build(
		stack(150, "java.lang.Throwable.fillInStackTrace", "java.lang.Throwable.fillInStackTrace", "java.lang.Throwable.<init>",
			"java.lang.Exception.<init>", "java.lang.NumberFormatException.<init>", "java.lang.NumberFormatException.forInputString",
			"java.lang.Integer.parseInt", "com.acme.login.LoginHandler.clientVersion", "com.acme.login.LoginHandler.handle"),
		stack(850, "com.acme.login.LoginHandler.render", "com.acme.login.LoginHandler.handle"),
	)
	clean = testprof.Build(
		stack(20, "com.acme.login.LoginHandler.clientVersion", "com.acme.login.LoginHandler.handle"),
		stack(980, "com.acme.login.LoginHandler.render", "com.acme.login.LoginHandler.handle"),
	)
)

func run(cpu *profile.Profile, jvm *jfr.Summary) rules.Result {
	ev := testprof.Evidence(map[evidence.Kind]*profile.Profile{evidence.CPU: cpu})
	ev.JVM = jvm
	return rules.Run(facts.New(ev), []*rules.Rule{Rule})
}

// summary is a JVM on 2 CPUs, busy at loadFrac of them, creating perMinute exceptions.
func summary(perMinute int64, loadFrac float64) *jfr.Summary {
	return &jfr.Summary{Exceptions: perMinute, ExceptionSpan: time.Minute, JVMCPU: loadFrac, HWThreads: 2}
}

func TestFiresOnSampledThrowableFrames(t *testing.T) {
	res := run(throwing, nil)
	if len(res.Findings) != 1 {
		t.Fatalf("want one finding, got %+v", res)
	}
	f := res.Findings[0]
	if f.Impact < 0.1 || !strings.Contains(f.Summary, "LoginHandler.clientVersion") {
		t.Errorf("impact %.2f summary %q", f.Impact, f.Summary)
	}
}

// JFR's sampler misses the stack walk: few sampled frames, but the
// exception statistics show 3 million a minute on a JVM using one CPU.
func TestFiresOnThrowRateWhenSamplesMissIt(t *testing.T) {
	res := run(clean, summary(3_000_000, 0.5))
	if len(res.Findings) != 1 {
		t.Fatalf("want one finding, got %+v", res)
	}
	f := res.Findings[0]
	// 50k/s x 2 µs = 0.1 CPU s/s of 1 CPU s/s.
	if f.Impact < 0.08 || f.Impact > 0.1 || !strings.Contains(f.Summary, "3.0M exceptions created per minute") {
		t.Errorf("impact %.3f summary %q", f.Impact, f.Summary)
	}
	if !strings.Contains(f.ImpactBasis, "does not see the stack walk") {
		t.Errorf("basis %q", f.ImpactBasis)
	}
}

// The JIT compiler and the profiler's own threads are not the service's
// work: the same throw rate against a JVM whose CPU is half compilation and
// attach requests (casebook E5 on a busy machine) weighs twice as much.
func TestThrowRateAgainstTheServingThreads(t *testing.T) {
	jvm := summary(3_000_000, 0.5)
	jvm.Threads = []jfr.ThreadLoad{
		{Name: "C2 CompilerThread0", User: 0.15}, {Name: "pool-1-thread-1", User: 0.25}, {Name: "Attach Listener", User: 0.08, System: 0.02},
	}
	res := run(clean, jvm)
	if len(res.Findings) != 1 {
		t.Fatalf("want one finding, got %+v", res)
	}
	// 50k/s x 2 µs = 0.1 CPU s/s of 0.5 CPU s/s serving.
	if f := res.Findings[0]; f.Impact < 0.17 || f.Impact > 0.19 {
		t.Errorf("impact %.3f, want 0.18 (the compiler's and attach listener's CPU left out)", f.Impact)
	}
}

func TestHealthCheckAt10kPerMinute(t *testing.T) {
	res := run(clean, summary(20_000, 0.5))
	if len(res.Findings) != 1 || res.Findings[0].Severity != rules.Low {
		t.Fatalf("want one low finding, got %+v", res.Findings)
	}
}

func TestSilent(t *testing.T) {
	for name, jvm := range map[string]*jfr.Summary{"no JVM": nil, "few exceptions": summary(600, 0.5)} {
		if res := run(clean, jvm); len(res.Findings) != 0 {
			t.Errorf("%s: reported %+v", name, res.Findings[0])
		}
	}
}

func TestThrowSitesFromExceptionEvents(t *testing.T) {
	exc := &profile.Profile{SampleType: []*profile.ValueType{{Type: "exceptions", Unit: "count"}}}
	fn := func(id uint64, name string) *profile.Location {
		f := &profile.Function{ID: id, Name: name}
		exc.Function = append(exc.Function, f)
		l := &profile.Location{ID: id, Line: []profile.Line{{Function: f, Line: 7}}}
		exc.Location = append(exc.Location, l)
		return l
	}
	a, b, c := fn(1, "java.lang.Throwable.<init>"), fn(2, "com.acme.Router.lookup"), fn(3, "com.acme.Server.handle")
	exc.Sample = []*profile.Sample{{Value: []int64{90}, Location: []*profile.Location{a, b, c}, Label: map[string][]string{"class": {"com.acme.NotFound"}}}}
	ev := testprof.Evidence(map[evidence.Kind]*profile.Profile{evidence.CPU: clean, evidence.Exceptions: exc})
	ev.JVM = summary(1_000_000, 0.5)
	ev.JVM.ThrowEvents = 90
	res := rules.Run(facts.New(ev), []*rules.Rule{Rule})
	if len(res.Findings) != 1 {
		t.Fatalf("want one finding, got %+v", res)
	}
	f := res.Findings[0]
	if !strings.Contains(f.Summary, "mostly com.acme.NotFound (in com.acme.Router.lookup)") || f.Locations[0].Function != "com.acme.Router.lookup" {
		t.Errorf("summary %q locations %+v", f.Summary, f.Locations)
	}
}

// async-profiler's samples of casebook E5 (formats/jfr/testdata/ap-e5.jfr)
// see the stack walk inside the VM: the rule uses their share and says so,
// showing the throw-rate estimate beside it unused. The same stacks
// credited to JFR's sampler, which misses the walk, take the larger
// estimate.
func TestMeasuredFromAsyncProfilerFrames(t *testing.T) {
	rec, err := jfr.ReadFile("../../formats/jfr/testdata/ap-e5.jfr")
	if err != nil {
		t.Fatal(err)
	}
	for _, profiler := range []string{rec.JVM.Profiler, ""} {
		jvm := summary(6_000_000, 0.25) // 100k/s x 2 µs = 0.2 CPU s/s of 0.5: an estimate of 40%
		jvm.Profiler = profiler
		res := run(rec.CPU, jvm)
		if len(res.Findings) != 1 {
			t.Fatalf("profiler %q: want one finding, got %+v", profiler, res)
		}
		f := res.Findings[0]
		measured := evidence.NewStacks(rec.CPU, "samples").Share(Frames)
		if measured < 0.05 || measured > 0.35 {
			t.Fatalf("fixture's exception share %.2f", measured)
		}
		if f.Locations[0].Function != "casebook.e5.Login.parseOr" {
			t.Errorf("profiler %q: created in %+v", profiler, f.Locations)
		}
		if profiler != "" {
			if math.Abs(f.Impact-rules.Estimated(measured*recoverable)) > 1e-9 || !strings.Contains(f.ImpactBasis, "measured from async-profiler 4.6") {
				t.Errorf("measured: impact %.3f (share %.3f) basis %q", f.Impact, measured, f.ImpactBasis)
			}
			continue
		}
		if f.Impact < 0.35 || !strings.Contains(f.ImpactBasis, "does not see the stack walk") {
			t.Errorf("JFR alone: impact %.3f basis %q", f.Impact, f.ImpactBasis)
		}
	}
}

// logback's caller data creates a Throwable per record and never throws it
// (a pattern with %class, %method or %line): those frames are the logging's
// cost. With them most of the Throwable frames and the rest under 3%, the
// throw count they inflate is not reported; beside a real throwing path
// they are left out of the share.
func TestALoggersCallerLookupIsNotThrowing(t *testing.T) {
	lookup := stack(60, "java.lang.Throwable.fillInStackTrace", "java.lang.Throwable.<init>", "ch.qos.logback.classic.spi.CallerData.extract",
		"ch.qos.logback.classic.spi.LoggingEvent.getCallerData", "ch.qos.logback.classic.pattern.LineOfCallerConverter.convert",
		"ch.qos.logback.classic.Logger.info", "com.acme.api.AccessLog.doFilter")
	jvm := summary(186_000, 0.5)
	jvm.Profiler = "async-profiler 4.6"
	res := run(testprof.Build(lookup, stack(940, "com.acme.api.Server.handle")), jvm)
	if len(res.Findings) != 0 {
		t.Errorf("only a logger's lookups: reported %s", res.Findings[0].Summary)
	}
	both := testprof.Build(lookup,
		stack(150, "java.lang.Throwable.fillInStackTrace", "java.lang.Throwable.<init>", "java.lang.Exception.<init>",
			"java.lang.NumberFormatException.<init>", "java.lang.Integer.parseInt", "com.acme.login.LoginHandler.clientVersion"),
		stack(790, "com.acme.api.Server.handle"))
	res = run(both, jvm)
	if len(res.Findings) != 1 {
		t.Fatalf("a throwing path beside the logger's: want one finding, got %+v", res)
	}
	if f := res.Findings[0]; f.Locations[0].Function != "com.acme.login.LoginHandler.clientVersion" || !strings.Contains(f.Summary, "15%") {
		t.Errorf("summary %q locations %+v: want 15%% in LoginHandler.clientVersion", f.Summary, f.Locations)
	}
}
