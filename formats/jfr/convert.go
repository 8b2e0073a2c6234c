package jfr

import (
	"encoding/binary"
	"encoding/json"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/google/pprof/profile"

	"github.com/perfdoctor/perfdoctor/formats/perfscript"
)

// converter accumulates a recording's events into profiles and a summary.
type converter struct {
	cpu, allocSample, allocTLAB, monitor, wait, exceptions, wall *builder
	// cpuTime is jdk.CPUTimeSample's profile, preferred to cpu; running
	// is the wall-clock samples of running threads, the CPU profile of a
	// recording with no CPU samples.
	cpuTime, running *builder
	// cpuTimePeriod is the first CPU-time sample's sampling period.
	cpuTimePeriod time.Duration
	// apEvent and apInterval are async-profiler's "event" and "interval"
	// settings: what it sampled, and how often.
	apEvent           string
	apInterval        time.Duration
	sum               Summary
	first, last       time.Time
	excFirst, excLast values
	excSeen           int
	cpuLoads          int
	threads           map[string]*threadAcc
	// threadLoadTimes are the jdk.ThreadCPULoad events' times: the JVM
	// emits one per live thread each period, in a batch, so their
	// clusters count the periods (threadLoadPeriods).
	threadLoadTimes []time.Time
	threading       *threadAgg
	explicitCallers map[string]bool
	vm              *vmAcc
	// wallMode is set by async-profiler's "event" setting "wall": its
	// execution samples are then wall-clock samples, running or not.
	wallMode bool
	window   *Window // nil: the whole recording (window.go)
}

type threadAcc struct {
	user, system float64
	n            int
}

// load is the thread's mean CPU load over the recording's periods of
// jdk.ThreadCPULoad: a thread alive for one of its ten periods counts a
// tenth of its load then, as its CPU time over the window does, and two
// threads of one name count both (the load is the name's).
func (t *threadAcc) load(periods int) (user, system float64) {
	n := float64(max(periods, 1))
	return t.user / n, t.system / n
}

// maxThreadLoadTimes bounds the times kept to count the periods.
const maxThreadLoadTimes = 1 << 20

// threadLoadPeriods counts the periods of jdk.ThreadCPULoad among the
// events' times: a batch is one period's, the next starts after a gap of a
// second or more (the shortest period JFR's settings give it is 1 s; a
// batch takes milliseconds). At least one.
func threadLoadPeriods(times []time.Time) int {
	if len(times) == 0 {
		return 1
	}
	sorted := slices.SortedFunc(slices.Values(times), func(a, b time.Time) int { return a.Compare(b) })
	periods := 1
	for i := 1; i < len(sorted); i++ {
		if sorted[i].Sub(sorted[i-1]) >= time.Second {
			periods++
		}
	}
	return periods
}

func newConverter() *converter {
	ids := frameIDs{}
	return &converter{
		cpu:             newBuilder(ids, "cpu", [2]string{"samples", "count"}, [2]string{"cpu", "nanoseconds"}),
		allocSample:     newBuilder(ids, "alloc_space", [2]string{"alloc_objects", "count"}, [2]string{"alloc_space", "bytes"}),
		allocTLAB:       newBuilder(ids, "alloc_space", [2]string{"alloc_objects", "count"}, [2]string{"alloc_space", "bytes"}),
		monitor:         newBuilder(ids, "delay", [2]string{"contentions", "count"}, [2]string{"delay", "nanoseconds"}),
		wait:            newBuilder(ids, "delay", [2]string{"contentions", "count"}, [2]string{"delay", "nanoseconds"}),
		exceptions:      newBuilder(ids, "exceptions", [2]string{"exceptions", "count"}),
		wall:            newBuilder(ids, "wall", [2]string{"samples", "count"}, [2]string{"wall", "nanoseconds"}),
		cpuTime:         newBuilder(ids, "cpu", [2]string{"samples", "count"}, [2]string{"cpu", "nanoseconds"}),
		running:         newBuilder(ids, "cpu", [2]string{"samples", "count"}, [2]string{"cpu", "nanoseconds"}),
		sum:             Summary{Format: SummaryFormat, Properties: map[string]string{}},
		threads:         map[string]*threadAcc{},
		threading:       newThreadAgg(),
		explicitCallers: map[string]bool{},
		vm:              newVMAcc(),
	}
}

func (c *converter) add(ev *event) {
	v := &ev.Values
	keep, span := c.window.admit(ev)
	if !keep {
		return
	}
	if span && !v.StartTime.IsZero() {
		if c.first.IsZero() || v.StartTime.Before(c.first) {
			c.first = v.StartTime
		}
		if end := v.StartTime.Add(max(time.Duration(v.Duration), 0)); end.After(c.last) {
			c.last = end
		}
	}
	s := &c.sum
	typ := strings.TrimPrefix(ev.Type, "jdk.")
	if typ != "ExecutionSample" || !c.wallMode && onCPU(v.State) {
		c.threading.add(typ, v)
	}
	c.addVM(typ, v)
	switch typ {
	case "ActiveRecording":
		if strings.HasPrefix(v.Name, "async-profiler") { // "async-profiler 4.6"
			s.Profiler = v.Name
		}
	case "ActiveSetting":
		switch v.Name {
		case "event":
			c.apEvent = rawString(v.Value)
			c.wallMode = c.wallMode || c.apEvent == "wall"
		case "interval":
			if n, err := strconv.ParseInt(rawString(v.Value), 10, 64); err == nil && n > 0 {
				c.apInterval = time.Duration(n)
			}
		}
	case "ExecutionSample":
		if c.wallMode || !onCPU(v.State) {
			// async-profiler's wall clock mode samples sleeping threads too.
			c.wall.add(v.StackTrace, []int64{1, int64(SamplePeriod)}, "thread", v.SampledThread.name())
			if running(v.State) {
				c.running.add(v.StackTrace, []int64{1, int64(SamplePeriod)}, "thread", v.SampledThread.name())
			}
			break
		}
		s.ExecutionSamples++
		c.addSample(v)
		c.cpu.add(v.StackTrace, []int64{1, int64(SamplePeriod)}, "thread", v.SampledThread.name())
	case "CPUTimeSample":
		s.CPUTimeSamples++
		if v.Failed {
			s.CPUTimeFailed++
		}
		period := time.Duration(v.SamplingPeriod)
		if period <= 0 {
			period = SamplePeriod
		}
		if c.cpuTimePeriod == 0 {
			c.cpuTimePeriod = period
		}
		c.cpuTime.add(v.StackTrace, []int64{1, int64(period)}, "thread", v.EventThread.name())
	case "CPUTimeSamplesLost":
		s.CPUTimeLost += max(v.LostSamples, 0)
	case wallClockEvent:
		n := max(v.Samples, 1)
		c.wall.add(v.StackTrace, []int64{n, n * int64(SamplePeriod)}, "thread", v.SampledThread.name())
		if running(v.State) {
			c.running.add(v.StackTrace, []int64{n, n * int64(SamplePeriod)}, "thread", v.SampledThread.name())
		}
	case "ObjectAllocationSample":
		c.allocSample.add(v.StackTrace, []int64{1, v.Weight}, "class", javaName(v.ObjectClass))
	case "ObjectAllocationInNewTLAB":
		c.allocTLAB.add(v.StackTrace, []int64{1, v.TLABSize}, "class", javaName(v.ObjectClass))
	case "ObjectAllocationOutsideTLAB":
		c.allocTLAB.add(v.StackTrace, []int64{1, v.AllocationSize}, "class", javaName(v.ObjectClass))
	case "JavaMonitorEnter":
		c.monitor.add(v.StackTrace, []int64{1, int64(v.Duration)}, "class", javaName(v.MonitorClass))
	case "JavaMonitorWait":
		c.wait.add(v.StackTrace, []int64{1, int64(v.Duration)}, "class", javaName(v.MonitorClass))
	case "JavaExceptionThrow":
		s.ThrowEvents++
		c.exceptions.add(v.StackTrace, []int64{1}, "class", javaName(v.ThrownClass))
	case "JavaErrorThrow":
		s.ErrorThrows++
		c.exceptions.add(v.StackTrace, []int64{1}, "class", javaName(v.ThrownClass))
	case "ExceptionStatistics":
		// throwables is cumulative since the JVM started.
		if c.excSeen == 0 || v.StartTime.Before(c.excFirst.StartTime) {
			c.excFirst = *v
		}
		if c.excSeen == 0 || !v.StartTime.Before(c.excLast.StartTime) {
			c.excLast = *v
		}
		c.excSeen++
	case "GarbageCollection":
		g := &s.GC
		g.Collections++
		g.PauseTotal += time.Duration(v.SumOfPauses)
		if p := time.Duration(v.LongestPause); p > g.PauseMax {
			g.PauseMax, g.PauseMaxCause = p, v.Cause
		}
		if v.Cause == "System.gc()" {
			g.Explicit++
			g.ExplicitPause += time.Duration(v.SumOfPauses)
		}
	case "SystemGC":
		if caller := firstCaller(v.StackTrace); caller != "" && len(c.explicitCallers) < 16 {
			c.explicitCallers[caller] = true
		}
	case "GCConfiguration":
		s.GC.Young, s.GC.Old = v.YoungCollector, v.OldCollector
		s.GC.ParallelThreads, s.GC.ConcThreads = v.ParallelGCThreads, v.ConcurrentGCThreads
		s.GC.ExplicitOff = v.IsExplicitGCDisabled
	case "CPUInformation":
		s.Cores, s.HWThreads = v.Cores, v.HWThreads
	case "JVMInformation":
		s.JVMName, s.JVMVersion, s.PID = v.JVMName, v.JVMVersion, v.PID
		s.JVMArguments, s.JavaArguments = v.JVMArguments, v.JavaArguments
		if v.JVMFlags != "" {
			s.JVMArguments = strings.TrimSpace(v.JVMFlags + " " + s.JVMArguments)
		}
	case "InitialSystemProperty":
		if len(s.Properties) < 4096 {
			s.Properties[v.Key] = rawString(v.Value)
		}
	case "BooleanFlag", "IntFlag", "UnsignedIntFlag", "LongFlag", "UnsignedLongFlag", "DoubleFlag", "StringFlag":
		if v.Origin != "" && v.Origin != "Default" && v.Origin != "Ergonomic" && len(s.Flags) < 4096 {
			s.Flags = append(s.Flags, Flag{Name: v.Name, Value: rawString(v.Value), Origin: v.Origin})
		}
	case "CPULoad":
		if v.JVMUser == 0 && v.JVMSystem == 0 && v.MachineTotal == 0 {
			break // the first sample of a recording has nothing to compare with and reads all zero
		}
		c.cpuLoads++
		s.JVMCPU += v.JVMUser + v.JVMSystem
		s.MachineCPU += v.MachineTotal
	case "ThreadCPULoad":
		name := v.EventThread.name()
		t := c.threads[name]
		if t == nil {
			if len(c.threads) >= 100_000 {
				return
			}
			t = &threadAcc{}
			c.threads[name] = t
		}
		t.user += v.User
		t.system += v.System
		t.n++
		if len(c.threadLoadTimes) < maxThreadLoadTimes {
			c.threadLoadTimes = append(c.threadLoadTimes, v.StartTime)
		}
	case "ThreadDump":
		s.ThreadDumps++
		if s.Deadlock == "" {
			s.Deadlock = DeadlockReport(v.Result)
		}
	}
}

// onCPU reports whether an execution sample's thread state is running:
// the JDK's samples are STATE_RUNNABLE, async-profiler's CPU samples
// STATE_DEFAULT (or none); sleeping, waiting and parked threads are not.
func onCPU(state string) bool {
	switch state {
	case "", "STATE_RUNNABLE", "STATE_DEFAULT", "STATE_RUNNING":
		return true
	}
	return false
}

// running reports whether a wall-clock sample caught its thread running:
// async-profiler marks those STATE_RUNNABLE (and the others sleeping), as
// Pyroscope reads them to derive CPU from a wall-clock recording.
func running(state string) bool { return state == "STATE_RUNNABLE" || state == "STATE_RUNNING" }

// Samplers name where a recording's CPU profile came from (Summary.Sampler).
const (
	SamplerCPUTime   = "jdk.CPUTimeSample"
	SamplerExecution = "jdk.ExecutionSample"
	// SamplerRunning is a CPU profile derived from wall-clock samples.
	SamplerRunning = "wall-clock samples of running threads"
)

// SamplerComment prefixes the comment of a CPU profile naming its sampler.
const SamplerComment = "jfr sampler: "

// timeEngines are async-profiler's engines whose interval is nanoseconds
// (the others count events: cycles, cache misses).
var timeEngines = map[string]bool{"cpu": true, "itimer": true, "ctimer": true, "wall": true}

// deadlockReport starts the JVM's own deadlock report in a thread dump.
var deadlockReport = regexp.MustCompile(`(?m)^Found (one|\d+) Java-level deadlocks?:`)

// DeadlockReport returns the JVM's deadlock report from a thread dump (jcmd
// Thread.print, jdk.ThreadDump), or "" when it reports none.
func DeadlockReport(dump string) string {
	loc := deadlockReport.FindStringIndex(dump)
	if loc == nil {
		return ""
	}
	report := dump[loc[0]:]
	return report[:min(len(report), 2000)]
}

// firstCaller names the first frame outside java.lang.System and
// java.lang.Runtime: the code that asked for a collection.
func firstCaller(st *stackTrace) string {
	if st == nil {
		return ""
	}
	for _, f := range st.Frames {
		name := frameName(&f)
		if !strings.HasPrefix(name, "java.lang.System.") && !strings.HasPrefix(name, "java.lang.Runtime.") {
			return name
		}
	}
	return ""
}

// rawString renders a JSON scalar as text: strings unquoted, numbers and
// booleans as written.
func rawString(b json.RawMessage) string {
	var s string
	if json.Unmarshal(b, &s) == nil {
		return s
	}
	if string(b) == "null" {
		return ""
	}
	return string(b)
}

func (c *converter) finish() *Recording {
	s := &c.sum
	s.Start, s.End = c.first, c.last
	c.vm.finish(&s.VM)
	if c.excSeen >= 2 {
		s.Exceptions = max(c.excLast.Throwables-c.excFirst.Throwables, 0)
		s.ExceptionSpan = c.excLast.StartTime.Sub(c.excFirst.StartTime)
	}
	if c.cpuLoads > 0 {
		s.JVMCPU /= float64(c.cpuLoads)
		s.MachineCPU /= float64(c.cpuLoads)
	}
	periods := threadLoadPeriods(c.threadLoadTimes)
	for name, t := range c.threads {
		user, system := t.load(periods)
		s.Threads = append(s.Threads, ThreadLoad{Name: name, User: user, System: system})
	}
	sort.Slice(s.Threads, func(i, j int) bool {
		a, b := s.Threads[i], s.Threads[j]
		if a.User+a.System != b.User+b.System {
			return a.User+a.System > b.User+b.System
		}
		return a.Name < b.Name
	})
	for _, t := range s.Threads { // in order, so every reader sums alike
		s.ThreadsCPU += t.User + t.System
	}
	s.Threads = s.Threads[:min(len(s.Threads), 20)]
	cpu := c.chooseCPU()
	s.Threading = c.threading.finish(c.threads, periods)
	for caller := range c.explicitCallers {
		s.GC.ExplicitCallers = append(s.GC.ExplicitCallers, caller)
	}
	sort.Strings(s.GC.ExplicitCallers)
	sort.SliceStable(s.Flags, func(i, j int) bool { return s.Flags[i].Name < s.Flags[j].Name })
	if len(s.Properties) == 0 {
		s.Properties = nil
	}
	span := c.last.Sub(c.first)
	allocs := c.allocSample
	if len(allocs.p.Sample) == 0 { // JDK 15 and older, or sampling off: the TLAB events
		allocs = c.allocTLAB
	}
	monitor := c.monitor.finish(c.first, span)
	if monitor != nil {
		monitor.Comments = []string{MonitorComment}
	}
	return &Recording{
		CPU:        cpu.finish(c.first, span),
		Allocs:     allocs.finish(c.first, span),
		Monitor:    monitor,
		Wait:       c.wait.finish(c.first, span),
		Exceptions: c.exceptions.finish(c.first, span),
		Wall:       c.wall.finish(c.first, span),
		JVM:        s,
	}
}

// chooseCPU picks the CPU profile's builder and says which in the summary
// and a comment: JDK 25's CPU-time sampler when it ran (it samples threads
// in Java, in the VM and in native code, where the execution sampler skips
// all but Java), else the execution samples, else the wall-clock samples of
// running threads. A per-thread count of samples follows the sampler.
// async-profiler's time-based samples weigh its interval.
func (c *converter) chooseCPU() *builder {
	s := &c.sum
	if s.Profiler != "" && c.apInterval > 0 && timeEngines[c.apEvent] {
		for _, b := range []*builder{c.cpu, c.wall, c.running} {
			b.reweigh(c.apInterval)
		}
	}
	var b *builder
	switch {
	case len(c.cpuTime.p.Sample) > 0:
		b, s.Sampler = c.cpuTime, SamplerCPUTime
		c.cpuTime.p.Period = int64(c.cpuTimePeriod)
		s.ExecutionSamples = s.CPUTimeSamples
		c.threading.samples = c.threading.cpuTimeSamples
	case len(c.cpu.p.Sample) > 0:
		b, s.Sampler = c.cpu, SamplerExecution
	case len(c.running.p.Sample) > 0:
		b, s.Sampler = c.running, SamplerRunning
	default:
		return c.cpu
	}
	b.p.Comments = append(b.p.Comments, SamplerComment+s.Sampler)
	return b
}

// reweigh sets the time a sample stands for, in a builder whose second
// value is time: async-profiler's interval, read once the recording's
// settings are.
func (b *builder) reweigh(period time.Duration) {
	for _, s := range b.p.Sample {
		s.Value[1] = s.Value[0] * int64(period)
	}
	if b.p.Period > 0 {
		b.p.Period = int64(period)
	}
}

// builder assembles one profile, interning functions and locations.
// Samples merge by label and stack; a stack's names and key are computed
// once per stack trace (stackTrace.names), which the native reader shares
// between the events that refer to the same pooled trace.
type builder struct {
	p         *profile.Profile
	functions map[string]*profile.Function
	locations map[locKey]*profile.Location
	samples   map[sampleKey]*profile.Sample
	mapping   *profile.Mapping
	ids       frameIDs // shared by the recording's builders
}

type locKey struct {
	fn   string
	line int64
}

// sampleKey identifies a sample: its one label's value and its stack's key.
type sampleKey struct{ label, stack string }

// maxSamples bounds the distinct stacks of one profile.
const maxSamples = 2_000_000

func newBuilder(ids frameIDs, defaultType string, types ...[2]string) *builder {
	b := &builder{
		ids:       ids,
		p:         &profile.Profile{DefaultSampleType: defaultType},
		functions: map[string]*profile.Function{},
		locations: map[locKey]*profile.Location{},
		samples:   map[sampleKey]*profile.Sample{},
		mapping:   &profile.Mapping{ID: 1, File: "[java]", HasFunctions: true, HasLineNumbers: true},
	}
	for _, t := range types {
		b.p.SampleType = append(b.p.SampleType, &profile.ValueType{Type: t[0], Unit: t[1]})
	}
	if defaultType == "cpu" {
		b.p.PeriodType = &profile.ValueType{Type: "cpu", Unit: "nanoseconds"}
		b.p.Period = int64(SamplePeriod)
	}
	b.p.Mapping = []*profile.Mapping{b.mapping}
	return b
}

func frameName(f *frame) string {
	cls := f.Method.Type.Name
	if cls == "" {
		return f.Method.Name
	}
	if strings.IndexByte(cls, '/') >= 0 {
		cls = strings.ReplaceAll(cls, "/", ".")
	}
	return cls + "." + f.Method.Name
}

// builderName is a frame's name within the builder: a Java frame's
// class.method, a native frame's object, class and function after
// nativePrefix.
func builderName(f *frame) string {
	if isNativeFrame(f) {
		return nativePrefix + nativeObject(f) + "\x00" + f.Method.Type.Name + "\x00" + f.Method.Name
	}
	return frameName(f)
}

// frameIDs numbers the frame names of a recording, so a stack's key is a
// few bytes a frame whatever the length of its names.
type frameIDs map[string]uint64

// names returns the builder names of a stack's frames and the key of the
// stack (its frames' numbers and lines), computed on first use.
func (st *stackTrace) names(ids frameIDs) ([]string, string) {
	if st.key != "" || len(st.Frames) == 0 {
		return st.frameNames, st.key
	}
	st.frameNames = make([]string, len(st.Frames))
	key := make([]byte, 0, 4*len(st.Frames))
	for i := range st.Frames {
		f := &st.Frames[i]
		if f.name == "" {
			f.name = builderName(f)
		}
		st.frameNames[i] = f.name
		id, ok := ids[f.name]
		if !ok {
			id = uint64(len(ids))
			ids[f.name] = id
		}
		key = binary.AppendUvarint(key, id)
		key = binary.AppendVarint(key, f.LineNumber)
	}
	st.key = string(key)
	return st.frameNames, st.key
}

// add merges one event's stack and values, with one string label.
func (b *builder) add(st *stackTrace, vals []int64, label, labelValue string) {
	var names []string
	k := sampleKey{label: labelValue}
	if st != nil {
		names, k.stack = st.names(b.ids)
	}
	if s := b.samples[k]; s != nil {
		for i := range vals {
			s.Value[i] += vals[i]
		}
		return
	}
	if len(b.samples) >= maxSamples {
		return
	}
	s := &profile.Sample{Value: append([]int64(nil), vals...)}
	if labelValue != "" {
		s.Label = map[string][]string{label: {labelValue}}
	}
	if len(names) == 0 {
		s.Location = []*profile.Location{b.location("[unknown]", 0)}
	}
	s.Location = slices.Grow(s.Location, len(names))
	for i := range names { // JFR lists the top frame first, as pprof does
		s.Location = append(s.Location, b.location(names[i], st.Frames[i].LineNumber))
	}
	b.samples[k] = s
	b.p.Sample = append(b.p.Sample, s)
}

// nativePrefix marks, within the builder, a native frame's name: it has no
// Java source file and belongs to the mapping of its object. The object,
// the frame's class and its function follow the prefix, NUL-separated.
const nativePrefix = "\x00native "

// nativeObject is the mapping a native frame belongs to: the kernel's, as
// perf names it, so rules tell kernel time from the code that made the
// call; the object async-profiler names as the frame's class ("libjvm.so",
// "libc.so.6", the application's JNI library, "vdso" as perf's "[vdso]");
// else "[native]".
func nativeObject(f *frame) string {
	switch lib := f.Method.Type.Name; {
	case f.Type == "Kernel":
		return perfscript.KernelMapping
	case lib == "vdso":
		return "[vdso]"
	case lib != "":
		return lib
	}
	return "[native]"
}

func (b *builder) location(name string, line int64) *profile.Location {
	line = max(line, 0)
	k := locKey{name, line}
	if l := b.locations[k]; l != nil {
		return l
	}
	mapping := b.mapping
	fnName, sysName, file := name, name, ""
	if native, ok := strings.CutPrefix(name, nativePrefix); ok {
		// Named by the function, as perf names it and rules match it; the
		// system name is jfr print's "libjvm.so.G1ParScanThreadState::trim_queue",
		// and the library is the mapping.
		object, rest, _ := strings.Cut(native, "\x00")
		class, fn, _ := strings.Cut(rest, "\x00")
		fnName, sysName, mapping = fn, fn, b.nativeMapping(object)
		if class != "" {
			sysName = class + "." + fn
		}
	} else {
		file = sourceFile(name)
	}
	fn := b.functions[name]
	if fn == nil {
		fn = &profile.Function{ID: uint64(len(b.p.Function) + 1), Name: fnName, SystemName: sysName, Filename: file}
		b.functions[name] = fn
		b.p.Function = append(b.p.Function, fn)
	}
	l := &profile.Location{ID: uint64(len(b.p.Location) + 1), Mapping: mapping, Line: []profile.Line{{Function: fn, Line: line}}}
	b.locations[k] = l
	b.p.Location = append(b.p.Location, l)
	return l
}

// nativeMapping is the mapping of native frames in object, made on first use.
func (b *builder) nativeMapping(object string) *profile.Mapping {
	for _, m := range b.p.Mapping {
		if m.File == object {
			return m
		}
	}
	m := &profile.Mapping{ID: uint64(len(b.p.Mapping) + 1), File: object, HasFunctions: true}
	b.p.Mapping = append(b.p.Mapping, m)
	return m
}

// sourceFile guesses a method's source file from its class, as Java
// stack traces do: "com.x.Outer$Inner.run" -> "com/x/Outer.java".
func sourceFile(method string) string {
	cls := method
	if i := strings.LastIndexByte(cls, '.'); i > 0 {
		cls = cls[:i]
	} else {
		return ""
	}
	if i := strings.IndexByte(cls, '$'); i > 0 {
		cls = cls[:i]
	}
	return strings.ReplaceAll(cls, ".", "/") + ".java"
}

// finish returns the profile, or nil when it has no samples.
func (b *builder) finish(start time.Time, span time.Duration) *profile.Profile {
	if len(b.p.Sample) == 0 {
		return nil
	}
	if !start.IsZero() {
		b.p.TimeNanos = start.UnixNano()
	}
	b.p.DurationNanos = int64(max(span, 0))
	return b.p
}
