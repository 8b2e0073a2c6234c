package jfr

import (
	"regexp"
	"strconv"
	"time"
)

// SummaryFormat marks a JVM summary written as JSON (jvm.json in a bundle).
const SummaryFormat = "perfdoctor-jvm-summary/1"

// Summary is what a recording says about the JVM beyond stacks: its
// configuration, collector, exceptions and threads. Counts cover the
// recording's span, Start to End.
type Summary struct {
	Format string    `json:"format"`
	Start  time.Time `json:"start"`
	End    time.Time `json:"end"`

	JVMName       string            `json:"jvm_name,omitempty"`
	JVMVersion    string            `json:"jvm_version,omitempty"`
	JVMArguments  string            `json:"jvm_arguments,omitempty"`
	JavaArguments string            `json:"java_arguments,omitempty"`
	PID           int               `json:"pid,omitempty"`
	Properties    map[string]string `json:"system_properties,omitempty"`
	// Flags are the JVM flags set on the command line or in a flags file
	// (origins other than Default and Ergonomic).
	Flags []Flag `json:"flags,omitempty"`

	Cores     int `json:"cores,omitempty"`
	HWThreads int `json:"hw_threads,omitempty"`

	GC GC `json:"gc"`

	// ExecutionSamples counts the CPU samples of the sampler the CPU
	// profile came from: jdk.ExecutionSample events, or jdk.CPUTimeSample
	// events when the recording has those (Sampler says which).
	ExecutionSamples int `json:"execution_samples"`
	// Sampler names the event the CPU profile came from: SamplerCPUTime,
	// SamplerExecution, or SamplerRunning when derived from wall-clock
	// samples; "" without a CPU profile.
	Sampler string `json:"sampler,omitempty"`
	// CPUTimeSamples counts jdk.CPUTimeSample events (JDK 25, JEP 509),
	// CPUTimeFailed those whose stack could not be walked, CPUTimeLost the
	// samples the JVM reported lost (jdk.CPUTimeSamplesLost).
	CPUTimeSamples int   `json:"cpu_time_samples,omitempty"`
	CPUTimeFailed  int   `json:"cpu_time_failed,omitempty"`
	CPUTimeLost    int64 `json:"cpu_time_lost,omitempty"`
	// Profiler names the profiler that took the execution samples when it
	// is not JFR's own sampler: "async-profiler 4.6", whose samples hold
	// the VM's own frames (an exception's stack walk, GC, compilation),
	// native and kernel frames, where JFR's hold Java frames only and
	// miss threads while the VM works for them.
	Profiler string `json:"profiler,omitempty"`
	// Exceptions is every Throwable created over the span, from
	// jdk.ExceptionStatistics; ExceptionSpan is the span those
	// statistics cover (zero when fewer than two were recorded).
	Exceptions    int64         `json:"exceptions_created"`
	ExceptionSpan time.Duration `json:"exceptions_span_ns"`
	// ThrowEvents counts jdk.JavaExceptionThrow events: zero unless the
	// recording enabled them. ErrorThrows counts jdk.JavaErrorThrow.
	ThrowEvents int `json:"exception_throw_events"`
	ErrorThrows int `json:"error_throw_events"`

	// JVMCPU and MachineCPU are the mean of jdk.CPULoad (fractions of all
	// CPUs); Threads the busiest threads by mean jdk.ThreadCPULoad over the
	// recording (a thread alive for part of it counts that part).
	JVMCPU     float64      `json:"jvm_cpu"`
	MachineCPU float64      `json:"machine_cpu"`
	Threads    []ThreadLoad `json:"threads,omitempty"`
	// ThreadsCPU is every thread's mean jdk.ThreadCPULoad summed (Threads
	// keeps the busiest 20), as a fraction of the machine's CPUs; 0 in
	// summaries written before it was.
	ThreadsCPU float64 `json:"threads_cpu,omitempty"`

	// ThreadDumps counts jdk.ThreadDump events; Deadlock holds the first
	// deadlock report found in one of them.
	ThreadDumps int    `json:"thread_dumps"`
	Deadlock    string `json:"deadlock,omitempty"`

	// Threading is pinning, lock waits, pools, thread counts, context
	// switches and the CPU load over time.
	Threading Threading `json:"threading"`
	// VM is the virtual machine's own work: safepoints, VM operations,
	// allocation stalls, the code cache, and the sampled stacks (vm.go).
	VM VM `json:"vm"`
}

// Flag is one JVM flag and where its value came from.
type Flag struct {
	Name   string `json:"name"`
	Value  string `json:"value"`
	Origin string `json:"origin"`
}

// GC is the collector's configuration and its pauses over the span.
type GC struct {
	Young           string        `json:"young_collector,omitempty"`
	Old             string        `json:"old_collector,omitempty"`
	ParallelThreads int           `json:"parallel_threads,omitempty"`
	ConcThreads     int           `json:"concurrent_threads,omitempty"`
	ExplicitOff     bool          `json:"explicit_gc_disabled,omitempty"`
	Collections     int           `json:"collections"`
	PauseTotal      time.Duration `json:"pause_total_ns"`
	PauseMax        time.Duration `json:"pause_max_ns"`
	PauseMaxCause   string        `json:"pause_max_cause,omitempty"`
	// Explicit counts collections caused by System.gc() (or Runtime.gc());
	// ExplicitCallers names the code that called it, from jdk.SystemGC.
	Explicit        int           `json:"explicit"`
	ExplicitPause   time.Duration `json:"explicit_pause_ns"`
	ExplicitCallers []string      `json:"explicit_callers,omitempty"`
	// CPU is the process's CPU time (user and system) during the pauses of
	// CPUCollections collections (jdk.GCCPUTime: G1, Parallel and Serial,
	// JDK 17.0.15 and later), when the application's threads are stopped.
	// Concurrent is the wall time of the phases that run beside the
	// application (jdk.GCPhaseConcurrent: G1's marking, all of ZGC's work).
	CPU            time.Duration `json:"cpu_ns"`
	CPUCollections int           `json:"cpu_collections"`
	Concurrent     time.Duration `json:"concurrent_ns"`
}

// ThreadLoad is one thread's mean CPU load, as fractions of the machine's
// CPUs as the JVM reports them.
type ThreadLoad struct {
	Name   string  `json:"name"`
	User   float64 `json:"user"`
	System float64 `json:"system"`
}

// Span is the recording's duration.
func (s *Summary) Span() time.Duration {
	if s == nil || s.End.Before(s.Start) {
		return 0
	}
	return s.End.Sub(s.Start)
}

// ExceptionsPerMinute is the rate at which Throwables were created, from
// the exception statistics; ok is false when the recording has fewer than
// two of them.
func (s *Summary) ExceptionsPerMinute() (rate float64, ok bool) {
	if s == nil || s.ExceptionSpan <= 0 {
		return 0, false
	}
	return float64(s.Exceptions) / s.ExceptionSpan.Minutes(), true
}

// jdkVersion finds the release in jdk.JVMInformation's jvmVersion: the
// JRE's version ("... for linux-amd64 JRE (25.0.3+9-LTS), built on ...",
// "JRE (1.8.0_392-b08)" before JDK 9), else the VM's, the same number from
// JDK 9 on.
var jdkVersion = []*regexp.Regexp{regexp.MustCompile(`JRE \((?:1\.)?(\d+)[.+_\-)]`), regexp.MustCompile(`\((\d+)[.+_\-)]`)}

// JDK is the JVM's feature release (17, 21, 25), 0 when unknown.
func (s *Summary) JDK() int {
	if s == nil {
		return 0
	}
	for _, re := range jdkVersion {
		if m := re.FindStringSubmatch(s.JVMVersion); m != nil {
			n, _ := strconv.Atoi(m[1])
			return n
		}
	}
	return 0
}
