package rules

// Classes are the finding classes of findings.md. A class slug is part of the
// JSON contract and never changes meaning once released.
var Classes = []string{
	// Go runtime
	"gc-pressure", "gc-scan-heavy-heap", "scheduler-overhead", "goroutine-churn",
	"scheduling-latency", "lock-contention", "oversized-allocation", "memory-growth",
	// Libraries on the hot path
	"metrics-summary-cost", "unbatched-producer", "reflection-serialization",
	"compression-level", "syscall-per-write", "connection-churn", "string-formatting",
	"regexp-compile-hot", "logging-cost", "hot-function",
	// JVM
	"exception-overhead", "framework-routing-cost",
	// JVM health checks from a JFR recording
	"jvm-gc-pauses", "jvm-explicit-gc", "jvm-gc-setup", "jvm-boxing", "jvm-deadlock", "jvm-flags",
	// Operating system and network
	"ephemeral-port-exhaustion", "kernel-network-overhead", "conntrack-pressure",
	"cpu-throttling", "fd-exhaustion", "listen-backlog", "path-bottleneck",
	// Waiting: where requests spend time off the CPU
	"sync-disk-write", "disk-io-wait", "downstream-wait", "gc-pause-tail",
}

// KnownClass reports whether slug is one of Classes.
func KnownClass(slug string) bool {
	for _, c := range Classes {
		if c == slug {
			return true
		}
	}
	return false
}
