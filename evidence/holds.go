package evidence

// What the evidence holds, asked by the rules engine (which inputs a rule
// has) and by reports (what the diagnosis read).

// HasRuntimeStats reports whether runtime statistics cover the window
// (MemStats or runtime/metrics samples, or a JFR recording's collector figures).
func (e *Evidence) HasRuntimeStats() bool {
	_, ok := e.GC()
	return ok
}

// HasProcess reports whether a /proc snapshot of the target process is there.
func (e *Evidence) HasProcess() bool {
	return e.SystemEnd != nil && e.SystemEnd.Process != nil
}

// HasTrace reports whether there is a Go execution trace (or its summary).
func (e *Evidence) HasTrace() bool {
	return e.TracePath != "" || e.TraceSummary != nil
}

// HasHostWindow reports whether two host snapshots bound a window.
func (e *Evidence) HasHostWindow() bool {
	_, ok := e.SystemDelta()
	return ok
}

// Platform is what the target runs on, as far as the evidence tells.
type Platform string

const (
	PlatformUnknown Platform = ""
	PlatformGo      Platform = "go"
	PlatformJVM     Platform = "jvm"
	// PlatformNative is a process seen through perf and /proc only (C,
	// C++, Rust...): no runtime of its own that perfdoctor reads.
	PlatformNative Platform = "native"
)

// Platform tells Go, JVM or native apart: a JFR recording means a JVM; a Go
// build in the executable, Go's heap or goroutine profiles, an execution
// trace or runtime statistics mean Go; perf stacks of a process with
// neither mean native.
func (e *Evidence) Platform() Platform {
	switch {
	case e.JVM != nil:
		return PlatformJVM
	case e.HasProcess() && e.SystemEnd.Process.GoVersion != "",
		e.Profile(Heap) != nil, e.Profile(Goroutine) != nil, e.HasTrace(), e.MetricsEnd != nil:
		return PlatformGo
	case e.Profile(Perf) != nil && e.HasProcess():
		return PlatformNative
	}
	return PlatformUnknown
}
