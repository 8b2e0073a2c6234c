package report

import (
	"fmt"
	"strings"

	"github.com/perfdoctor/perfdoctor/evidence"
)

// JVMInfo describes the JVM a JFR recording came from.
type JVMInfo struct {
	Version             string  `json:"version"`
	Collectors          string  `json:"collectors,omitempty"`
	HWThreads           int     `json:"hw_threads,omitempty"`
	ExceptionsPerMinute float64 `json:"exceptions_per_minute,omitempty"`
	// Profiler took the samples when not JFR: "async-profiler 4.6".
	Profiler string `json:"profiler,omitempty"`
}

func jvmInfo(ev *evidence.Evidence) *JVMInfo {
	s := ev.JVM
	if s == nil {
		return nil
	}
	info := &JVMInfo{Version: s.Properties["java.vm.version"], HWThreads: s.HWThreads, Profiler: s.Profiler}
	if info.Version == "" {
		// "OpenJDK 64-Bit Server VM (17.0.15+6-...) for linux-amd64 JRE ...": the part in parentheses.
		if _, rest, ok := strings.Cut(s.JVMVersion, "("); ok {
			info.Version, _, _ = strings.Cut(rest, ")")
		}
	}
	if s.GC.Young != "" {
		info.Collectors = s.GC.Young + "/" + s.GC.Old
	}
	info.ExceptionsPerMinute, _ = s.ExceptionsPerMinute()
	return info
}

// describeJVM is the inputs line's part for a JVM.
func describeJVM(j *JVMInfo) string {
	if j == nil {
		return ""
	}
	var extra []string
	if j.Collectors != "" {
		extra = append(extra, j.Collectors)
	}
	if j.HWThreads > 0 {
		extra = append(extra, fmt.Sprintf("%d CPUs", j.HWThreads))
	}
	s := "JFR recording of JVM " + j.Version
	if len(extra) > 0 {
		s += " (" + strings.Join(extra, ", ") + ")"
	}
	if j.Profiler != "" {
		s += ", samples from " + j.Profiler
	}
	return s
}
