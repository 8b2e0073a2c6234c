package lib008

import (
	"strings"
	"testing"

	"github.com/perfdoctor/perfdoctor/internal/testprof"
)

func TestLogbackOnTheJVM(t *testing.T) {
	res := run(testprof.Build(
		testprof.Stack{Value: 150, Funcs: []string{"ch.qos.logback.classic.pattern.LineOfCallerConverter.convert", "ch.qos.logback.core.pattern.PatternLayoutBase.writeLoopOnConverters",
			"ch.qos.logback.classic.Logger.info", "com.acme.api.OrderService.place", "com.acme.api.Server.handle"}},
		testprof.Stack{Value: 850, Funcs: []string{"com.acme.api.Server.handle"}},
	))
	if len(res.Findings) != 1 {
		t.Fatalf("want a finding, got %+v", res)
	}
	f := res.Findings[0]
	if !strings.Contains(f.Summary, "logback/SLF4J") || !strings.Contains(f.Summary, "OrderService.place") || !strings.Contains(f.Fix, "AsyncAppender") {
		t.Errorf("summary %q fix %q", f.Summary, f.Fix)
	}
}

// A pattern asking for the caller's location: most of logback's cost is
// the stack walk, and dropping the location leads the fix.
func TestCallerDataLeadsTheFix(t *testing.T) {
	res := run(testprof.Build(
		testprof.Stack{Value: 90, Funcs: []string{"java.lang.StackTraceElement.of", "java.lang.Throwable.getStackTrace", "ch.qos.logback.classic.spi.CallerData.extract",
			"ch.qos.logback.classic.spi.LoggingEvent.getCallerData", "ch.qos.logback.classic.pattern.LineOfCallerConverter.convert",
			"ch.qos.logback.classic.Logger.info", "com.acme.api.AccessLog.doFilter"}},
		testprof.Stack{Value: 70, Funcs: []string{"ch.qos.logback.core.pattern.PatternLayoutBase.writeLoopOnConverters",
			"ch.qos.logback.classic.Logger.info", "com.acme.api.AccessLog.doFilter"}},
		testprof.Stack{Value: 840, Funcs: []string{"com.acme.api.Server.handle"}},
	))
	if len(res.Findings) != 1 {
		t.Fatalf("want a finding, got %+v", res)
	}
	f := res.Findings[0]
	if !strings.Contains(f.Summary, "9.0% of it looking up each record's caller") || !strings.HasPrefix(f.Fix, "Drop the caller's location") ||
		strings.Count(f.Fix, "includeCallerData") != 1 {
		t.Errorf("summary %q fix %q", f.Summary, f.Fix)
	}
	// Without the lookup, the level leads.
	if g := run(testprof.Build(
		testprof.Stack{Value: 160, Funcs: []string{"ch.qos.logback.core.pattern.PatternLayoutBase.writeLoopOnConverters", "ch.qos.logback.classic.Logger.info", "com.acme.api.AccessLog.doFilter"}},
		testprof.Stack{Value: 840, Funcs: []string{"com.acme.api.Server.handle"}},
	)).Findings[0]; !strings.HasPrefix(g.Fix, "Raise the level") {
		t.Errorf("no lookup: fix %q", g.Fix)
	}
}
