package rules

import (
	"strings"
	"testing"

	"github.com/perfdoctor/perfdoctor/bundle"
	"github.com/perfdoctor/perfdoctor/evidence"
)

func TestRedundantModules(t *testing.T) {
	ev := evidence.NewBuilder().Evidence()
	if got := RedundantModules(ev); got != "" {
		t.Errorf("unknown build: %q", got)
	}
	build := &bundle.BuildInfo{GoVersion: "go1.26.8", Modules: []string{"go.uber.org/automaxprocs@v1.6.0"}, Source: "agent"}
	ev.MetricsEnd = &bundle.RuntimeStats{Runtime: &bundle.RuntimeMetrics{Build: build}}
	if got := RedundantModules(ev); !strings.HasPrefix(got, "Remove go.uber.org/automaxprocs@v1.6.0: Go >= 1.25") {
		t.Errorf("automaxprocs on Go 1.26 from the agent: %q", got)
	}
	build.GoVersion = "go1.24.6"
	if got := RedundantModules(ev); got != "" {
		t.Errorf("automaxprocs on Go 1.24: %q", got)
	}
}
