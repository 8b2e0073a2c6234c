package evidence

import (
	"testing"

	"github.com/perfdoctor/perfdoctor/bundle"
)

// TestRuntimeSettingsWinOverEnvironment: the environment says what the
// process started with; runtime/metrics what it runs with now (after
// debug.SetGCPercent, SetMemoryLimit or the agent's tuner).
func TestRuntimeSettingsWinOverEnvironment(t *testing.T) {
	ev := &Evidence{
		SystemEnd: &bundle.SystemSnapshot{
			Machine: bundle.MachineInfo{NumCPU: 8},
			Process: &bundle.ProcessInfo{GoVersion: "go1.26.8", GoEnv: map[string]string{"GOGC": "100", "GOMEMLIMIT": "1GiB", "GOMAXPROCS": "8"}},
		},
	}
	if s := ev.Settings(); s.GOGC != 100 || s.GOMEMLIMIT != 1<<30 || s.GOMAXPROCS != 8 {
		t.Fatalf("from the environment: %+v", s)
	}
	ev.MetricsEnd = &bundle.RuntimeStats{Runtime: &bundle.RuntimeMetrics{GOGC: 400, GOMEMLIMIT: 3 << 30, GOMAXPROCS: 4}}
	if s := ev.Settings(); s.GOGC != 400 || s.GOMEMLIMIT != 3<<30 || s.GOMAXPROCS != 4 || s.GOMAXPROCSSrc != "runtime/metrics" {
		t.Errorf("runtime values must win: %+v", s)
	}
}
