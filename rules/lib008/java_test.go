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
