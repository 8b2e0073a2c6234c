package evidence

import (
	"testing"
	"time"

	"github.com/google/pprof/profile"

	"github.com/perfdoctor/perfdoctor/bundle"
	"github.com/perfdoctor/perfdoctor/formats/jfr"
)

func TestPlatform(t *testing.T) {
	process := func(goVersion string) *bundle.SystemSnapshot {
		return &bundle.SystemSnapshot{Time: time.Now(), Process: &bundle.ProcessInfo{PID: 1, GoVersion: goVersion}}
	}
	for name, c := range map[string]struct {
		set  func(e *Evidence)
		want Platform
	}{
		"nothing":           {func(e *Evidence) {}, PlatformUnknown},
		"JFR recording":     {func(e *Evidence) { e.JVM = &jfr.Summary{}; e.MetricsEnd = &bundle.RuntimeStats{} }, PlatformJVM},
		"Go build in /proc": {func(e *Evidence) { e.SystemEnd = process("go1.26") }, PlatformGo},
		"goroutine profile": {func(e *Evidence) { e.Profiles[Goroutine] = &profile.Profile{} }, PlatformGo},
		"runtime stats":     {func(e *Evidence) { e.MetricsEnd = &bundle.RuntimeStats{} }, PlatformGo},
		"perf of a native process": {func(e *Evidence) {
			e.SystemEnd = process("")
			e.Profiles[Perf] = &profile.Profile{}
		}, PlatformNative},
		"perf without a process": {func(e *Evidence) { e.Profiles[Perf] = &profile.Profile{} }, PlatformUnknown},
	} {
		e := NewBuilder("test").Evidence()
		c.set(e)
		if got := e.Platform(); got != c.want {
			t.Errorf("%s: Platform() = %q, want %q", name, got, c.want)
		}
	}
}
