package jfr

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/google/pprof/profile"
)

// SamplePeriod is the execution sampler's interval assumed when turning
// sample counts into CPU time: the "profile" settings' 10 ms. The JSON output
// does not say which period a recording used; shares do not depend on it.
const SamplePeriod = 10 * time.Millisecond

// MonitorComment marks the Monitor profile, which has the mutex profile's
// sample types but none of the Unlock frames that tell a Go mutex profile
// from a block profile.
const MonitorComment = "jfr: jdk.JavaMonitorEnter"

// Recording is a converted recording: one profile per kind of stack event
// (nil when the recording has none) and the JVM summary.
type Recording struct {
	// CPU is the CPU samples: jdk.CPUTimeSample's when the recording has
	// them (JDK 25, JEP 509), else jdk.ExecutionSample's, else derived from
	// wall-clock samples of running threads; Summary.Sampler says which.
	// samples/count, cpu/nanoseconds.
	CPU        *profile.Profile
	Allocs     *profile.Profile // allocation samples: alloc_objects/count, alloc_space/bytes
	Monitor    *profile.Profile // jdk.JavaMonitorEnter: contentions/count, delay/nanoseconds
	Wait       *profile.Profile // jdk.JavaMonitorWait: contentions/count, delay/nanoseconds
	Exceptions *profile.Profile // jdk.JavaExceptionThrow and JavaErrorThrow: exceptions/count
	// Wall is wall-clock samples (async-profiler's profiler.WallClockSample,
	// or execution samples of threads that were not running): samples/count,
	// wall/nanoseconds. They are never CPU time.
	Wall *profile.Profile
	JVM  *Summary
	// Partial says why the recording was read only in part (its last
	// chunk cut short); empty when read whole.
	Partial string
}

// wallClockEvent is async-profiler's wall-clock sample (3.0 and later).
const wallClockEvent = "profiler.WallClockSample"

// Wire types: only the fields used are decoded.
type (
	event struct {
		Type   string `json:"type"`
		Values values `json:"values"`
	}
	values struct {
		StartTime     time.Time   `json:"startTime"`
		Duration      jsonDur     `json:"duration"`
		StackTrace    *stackTrace `json:"stackTrace"`
		SampledThread *thread     `json:"sampledThread"`
		EventThread   *thread     `json:"eventThread"`

		Weight         int64  `json:"weight"`
		AllocationSize int64  `json:"allocationSize"`
		TLABSize       int64  `json:"tlabSize"`
		ObjectClass    *class `json:"objectClass"`
		MonitorClass   *class `json:"monitorClass"`
		ThrownClass    *class `json:"thrownClass"`
		Throwables     int64  `json:"throwables"`

		Name         string  `json:"name"`
		Cause        string  `json:"cause"`
		SumOfPauses  jsonDur `json:"sumOfPauses"`
		LongestPause jsonDur `json:"longestPause"`

		YoungCollector       string `json:"youngCollector"`
		OldCollector         string `json:"oldCollector"`
		ParallelGCThreads    int    `json:"parallelGCThreads"`
		ConcurrentGCThreads  int    `json:"concurrentGCThreads"`
		IsExplicitGCDisabled bool   `json:"isExplicitGCDisabled"`

		JVMName       string `json:"jvmName"`
		JVMVersion    string `json:"jvmVersion"`
		JVMArguments  string `json:"jvmArguments"`
		JVMFlags      string `json:"jvmFlags"`
		JavaArguments string `json:"javaArguments"`
		PID           int    `json:"pid"`

		Key    string          `json:"key"`
		Value  json.RawMessage `json:"value"`
		Origin string          `json:"origin"`

		User         float64 `json:"user"`
		System       float64 `json:"system"`
		JVMUser      float64 `json:"jvmUser"`
		JVMSystem    float64 `json:"jvmSystem"`
		MachineTotal float64 `json:"machineTotal"`

		Cores     int `json:"cores"`
		HWThreads int `json:"hwThreads"`

		Result string `json:"result"`

		BlockingOperation string  `json:"blockingOperation"` // jdk.VirtualThreadPinned, JDK 24+
		PinnedReason      string  `json:"pinnedReason"`
		ParkedClass       *class  `json:"parkedClass"`
		ActiveCount       int64   `json:"activeCount"`
		PeakCount         int64   `json:"peakCount"`
		SwitchRate        float64 `json:"switchRate"`
		// The VM's own work (vm.go): safepoints, operations, code cache, GC CPU.
		SafepointID         int64   `json:"safepointId"`
		Operation           string  `json:"operation"`
		Safepoint           bool    `json:"safepoint"`
		Caller              *thread `json:"caller"`
		CodeBlobType        string  `json:"codeBlobType"`
		StartAddress        int64   `json:"startAddress"`
		ReservedTopAddress  int64   `json:"reservedTopAddress"`
		EntryCount          int64   `json:"entryCount"`
		UnallocatedCapacity int64   `json:"unallocatedCapacity"`
		FullCount           int64   `json:"fullCount"`
		UserTime            jsonDur `json:"userTime"`
		SystemTime          jsonDur `json:"systemTime"`

		State   string `json:"state"`   // the sampled thread's state
		Samples int64  `json:"samples"` // profiler.WallClockSample: samples merged in one event

		// jdk.CPUTimeSample (JDK 25): the stack walk failed, and the CPU
		// time the sample stands for; jdk.CPUTimeSamplesLost.
		Failed         bool    `json:"failed"`
		SamplingPeriod jsonDur `json:"samplingPeriod"`
		LostSamples    int64   `json:"lostSamples"`
	}
	stackTrace struct {
		Truncated bool    `json:"truncated"`
		Frames    []frame `json:"frames"`
		// frameNames and key are the builder's names of the frames and
		// the stack's key (stackTrace.names), computed once.
		frameNames []string
		key        string
	}
	frame struct {
		Method struct {
			Type class  `json:"type"`
			Name string `json:"name"`
			// Descriptor is the method's signature; async-profiler
			// writes "()L;" for native code, "(Lk;)L;" for the kernel.
			Descriptor string `json:"descriptor"`
		} `json:"method"`
		LineNumber int64  `json:"lineNumber"`
		Type       string `json:"type"`
		name       string // the builder's name (builderName), once computed
	}
	class struct {
		Name string `json:"name"`
	}
	thread struct {
		JavaName string `json:"javaName"`
		OSName   string `json:"osName"`
	}
)

func (t *thread) name() string {
	switch {
	case t == nil:
		return ""
	case t.JavaName != "":
		return t.JavaName
	}
	return t.OSName
}

// javaName turns "java/lang/String" into "java.lang.String".
func javaName(c *class) string {
	if c == nil {
		return ""
	}
	return strings.ReplaceAll(c.Name, "/", ".")
}

// maxEvents bounds one recording's events, so a hostile or runaway input
// cannot grow the profiles without end.
const maxEvents = 50_000_000

// Parse decodes the output of `jfr print --json` from r, one event at a time.
func Parse(r io.Reader) (*Recording, error) {
	dec := json.NewDecoder(r)
	if err := expectPath(dec, "recording", "events"); err != nil {
		return nil, err
	}
	c := newConverter()
	n := 0
	for dec.More() {
		var ev event
		if err := dec.Decode(&ev); err != nil {
			return nil, fmt.Errorf("event %d: %w", n+1, err)
		}
		if n++; n > maxEvents {
			return nil, fmt.Errorf("more than %d events", maxEvents)
		}
		c.add(&ev)
	}
	if _, err := dec.Token(); err != nil { // the closing ']'
		return nil, fmt.Errorf("after event %d: %w", n, err)
	}
	if n == 0 {
		return nil, errors.New("the recording holds none of the events perfdoctor reads")
	}
	return c.finish(), nil
}

// expectPath reads `{"a": {"b": [` for keys a, b, skipping other keys'
// values on the way.
func expectPath(dec *json.Decoder, keys ...string) error {
	for i, key := range keys {
		if err := expectDelim(dec, '{'); err != nil {
			return err
		}
		for {
			tok, err := dec.Token()
			if err != nil {
				return fmt.Errorf("not jfr print --json output: %w", err)
			}
			name, ok := tok.(string)
			if !ok {
				return fmt.Errorf("not jfr print --json output: no %q", key)
			}
			if name == key {
				break
			}
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				return fmt.Errorf("not jfr print --json output: %w", err)
			}
		}
		if i == len(keys)-1 {
			return expectDelim(dec, '[')
		}
	}
	return nil
}

func expectDelim(dec *json.Decoder, want json.Delim) error {
	tok, err := dec.Token()
	if err != nil {
		return fmt.Errorf("not jfr print --json output: %w", err)
	}
	if d, ok := tok.(json.Delim); !ok || d != want {
		return fmt.Errorf("not jfr print --json output: want %q, got %v", want, tok)
	}
	return nil
}

// jsonDur is an ISO-8601 duration as the jfr tool prints them ("PT0.0045S",
// "PT1M2.5S", "PT-2562047788015215H-30M-8S" for "unbounded").
type jsonDur time.Duration

func (d *jsonDur) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		if string(b) == "null" {
			return nil
		}
		return err
	}
	v, err := ParseDuration(s)
	*d = jsonDur(v)
	return err
}

// ParseDuration parses the ISO-8601 durations the jfr tool prints
// (PnDTnHnMn.nS, parts optional, each possibly negative). Values past the
// range of time.Duration saturate.
func ParseDuration(s string) (time.Duration, error) {
	rest, ok := strings.CutPrefix(s, "P")
	if !ok {
		return 0, fmt.Errorf("duration %q: want ISO-8601 (PT1.5S)", s)
	}
	var total float64 // for saturation
	var exact int64   // nanoseconds, exact while in range
	inTime := false
	for rest != "" {
		if rest[0] == 'T' {
			inTime, rest = true, rest[1:]
			continue
		}
		i := strings.IndexAny(rest, "DHMS")
		if i <= 0 {
			return 0, fmt.Errorf("duration %q: want ISO-8601 (PT1.5S)", s)
		}
		var v float64
		if _, err := fmt.Sscan(rest[:i], &v); err != nil {
			return 0, fmt.Errorf("duration %q: %w", s, err)
		}
		unit := map[byte]int64{'D': 86400, 'H': 3600, 'M': 60, 'S': 1}[rest[i]]
		if rest[i] == 'M' && !inTime {
			return 0, fmt.Errorf("duration %q: months are not a duration", s)
		}
		total += v * float64(unit) * 1e9
		exact += decimalNanos(rest[:i]) * unit
		rest = rest[i+1:]
	}
	switch {
	case total >= float64(1<<63-1):
		return 1<<63 - 1, nil
	case total <= -float64(1<<63):
		return -1 << 63, nil
	}
	return time.Duration(exact), nil
}

// decimalNanos reads a decimal number of seconds ("-0.011971463") as
// nanoseconds without the rounding of a float: jfr prints durations to the
// nanosecond, and the native reader must agree with it exactly.
func decimalNanos(s string) int64 {
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	whole, frac, _ := strings.Cut(s, ".")
	frac = (frac + "000000000")[:9]
	w, _ := strconv.ParseInt(whole, 10, 64)
	f, _ := strconv.ParseInt(frac, 10, 64)
	n := w*1e9 + f
	if neg {
		return -n
	}
	return n
}
