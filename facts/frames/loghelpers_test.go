package frames

import (
	"testing"

	"github.com/perfdoctor/perfdoctor/evidence"
	"github.com/perfdoctor/perfdoctor/internal/testprof"
)

func TestLogHelperName(t *testing.T) {
	for fn, want := range map[string]bool{
		"github.com/nats-io/nats-server/v2/server.(*client).traceMsg":          true,
		"github.com/nats-io/nats-server/v2/server.(*client).traceInOp":         true,
		"github.com/nats-io/nats-server/v2/server.(*Server).Tracef.func1":      true,
		"example.com/app.logRequest":                                           true,
		"example.com/app.(*svc).Debugf":                                        true,
		"example.com/app.(*svc).debugln":                                       true,
		"example.com/app.handleLogin":                                          false,
		"example.com/app.login":                                                false,
		"example.com/app.(*tracer).Start":                                      false,
		"example.com/app.logical":                                              false,
		"example.com/app.(*catalog).Get":                                       false,
		"go.opentelemetry.io/otel/sdk/trace.(*tracer).Start":                   false,
		"github.com/nats-io/nats-server/v2/server.(*client).processInboundMsg": false,
	} {
		if got := LogHelperName(fn); got != want {
			t.Errorf("%s: %v, want %v", fn, got, want)
		}
	}
}

// The helper's own formatting is the record's; the logger's samples are the
// logger family's; a helper that never reaches a logger (a span's trace
// helper) and the work of a handler under a helper are not.
func TestLogHelpers(t *testing.T) {
	cpu := testprof.Build(
		testprof.Stack{Value: 60, Funcs: []string{"log.(*Logger).output", "log.(*Logger).Printf", "app.(*client).traceMsg", "app.(*client).processMsg"}},
		testprof.Stack{Value: 15, Funcs: []string{"fmt.Sprintf", "app.(*client).format", "app.(*client).traceMsg", "app.(*client).processMsg"}},
		testprof.Stack{Value: 10, Funcs: []string{"app.traceSpan", "app.(*client).processMsg"}},
		testprof.Stack{Value: 5, Funcs: []string{"app.(*api).ServeHTTP", "app.logRequests", "net/http.(*conn).serve"}},
		testprof.Stack{Value: 10, Funcs: []string{"app.(*client).processMsg"}},
	)
	st := evidence.NewStacks(cpu, "")
	in := LogHelpers(st, evidence.FuncPrefix("log."))
	if got := st.ShareWhere(in); got != 0.15 {
		t.Errorf("helpers' own share %.2f, want 0.15 (traceMsg's formatting only)", got)
	}
}
