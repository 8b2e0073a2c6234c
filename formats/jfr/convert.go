package jfr

import (
	"encoding/json"
	"regexp"
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
	sum                                                          Summary
	first, last                                                  time.Time
	excFirst, excLast                                            values
	excSeen                                                      int
	cpuLoads                                                     int
	threads                                                      map[string]*threadAcc
	threading                                                    *threadAgg
	explicitCallers                                              map[string]bool
	vm                                                           *vmAcc
	// wallMode is set by async-profiler's "event" setting "wall": its
	// execution samples are then wall-clock samples, running or not.
	wallMode bool
	window   *Window // nil: the whole recording (window.go)
}

type threadAcc struct {
	user, system float64
	n            int
}

func newConverter() *converter {
	return &converter{
		cpu:             newBuilder("cpu", [2]string{"samples", "count"}, [2]string{"cpu", "nanoseconds"}),
		allocSample:     newBuilder("alloc_space", [2]string{"alloc_objects", "count"}, [2]string{"alloc_space", "bytes"}),
		allocTLAB:       newBuilder("alloc_space", [2]string{"alloc_objects", "count"}, [2]string{"alloc_space", "bytes"}),
		monitor:         newBuilder("delay", [2]string{"contentions", "count"}, [2]string{"delay", "nanoseconds"}),
		wait:            newBuilder("delay", [2]string{"contentions", "count"}, [2]string{"delay", "nanoseconds"}),
		exceptions:      newBuilder("exceptions", [2]string{"exceptions", "count"}),
		wall:            newBuilder("wall", [2]string{"samples", "count"}, [2]string{"wall", "nanoseconds"}),
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
		if v.Name == "event" && rawString(v.Value) == "wall" {
			c.wallMode = true
		}
	case "ExecutionSample":
		if c.wallMode || !onCPU(v.State) {
			// async-profiler's wall clock mode samples sleeping threads too.
			c.wall.add(v.StackTrace, []int64{1, int64(SamplePeriod)}, "thread", v.SampledThread.name())
			break
		}
		s.ExecutionSamples++
		c.addSample(v)
		c.cpu.add(v.StackTrace, []int64{1, int64(SamplePeriod)}, "thread", v.SampledThread.name())
	case wallClockEvent:
		n := max(v.Samples, 1)
		c.wall.add(v.StackTrace, []int64{n, n * int64(SamplePeriod)}, "thread", v.SampledThread.name())
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
	for name, t := range c.threads {
		s.Threads = append(s.Threads, ThreadLoad{Name: name, User: t.user / float64(t.n), System: t.system / float64(t.n)})
	}
	sort.Slice(s.Threads, func(i, j int) bool {
		a, b := s.Threads[i], s.Threads[j]
		if a.User+a.System != b.User+b.System {
			return a.User+a.System > b.User+b.System
		}
		return a.Name < b.Name
	})
	s.Threads = s.Threads[:min(len(s.Threads), 20)]
	s.Threading = c.threading.finish(c.threads)
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
		CPU:        c.cpu.finish(c.first, span),
		Allocs:     allocs.finish(c.first, span),
		Monitor:    monitor,
		Wait:       c.wait.finish(c.first, span),
		Exceptions: c.exceptions.finish(c.first, span),
		Wall:       c.wall.finish(c.first, span),
		JVM:        s,
	}
}

// builder assembles one profile, interning functions and locations.
type builder struct {
	p         *profile.Profile
	functions map[string]*profile.Function
	locations map[locKey]*profile.Location
	samples   map[string]*profile.Sample
	mapping   *profile.Mapping
	key       strings.Builder
}

type locKey struct {
	fn   string
	line int64
}

// maxSamples bounds the distinct stacks of one profile.
const maxSamples = 2_000_000

func newBuilder(defaultType string, types ...[2]string) *builder {
	b := &builder{
		p:         &profile.Profile{DefaultSampleType: defaultType},
		functions: map[string]*profile.Function{},
		locations: map[locKey]*profile.Location{},
		samples:   map[string]*profile.Sample{},
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
	cls := strings.ReplaceAll(f.Method.Type.Name, "/", ".")
	if cls == "" {
		return f.Method.Name
	}
	return cls + "." + f.Method.Name
}

// add merges one event's stack and values, with one string label.
func (b *builder) add(st *stackTrace, vals []int64, label, labelValue string) {
	var frames []frame
	if st != nil {
		frames = st.Frames
	}
	b.key.Reset()
	b.key.WriteString(labelValue)
	names := make([]string, len(frames))
	for i := range frames {
		names[i] = frameName(&frames[i])
		if isNativeFrame(&frames[i]) {
			names[i] = nativePrefix + nativeObject(&frames[i]) + "\x00" + frames[i].Method.Name
		}
		b.key.WriteByte(0)
		b.key.WriteString(names[i])
		b.key.WriteByte(0)
		b.key.WriteString(strconv.FormatInt(frames[i].LineNumber, 10))
	}
	key := b.key.String()
	if s := b.samples[key]; s != nil {
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
	if len(frames) == 0 {
		s.Location = []*profile.Location{b.location("[unknown]", 0)}
	}
	for i := range frames { // JFR lists the top frame first, as pprof does
		s.Location = append(s.Location, b.location(names[i], frames[i].LineNumber))
	}
	b.samples[key] = s
	b.p.Sample = append(b.p.Sample, s)
}

// nativePrefix marks, within the builder, a native frame's name: it has no
// Java source file and belongs to the mapping of its object, which follows
// the prefix up to a NUL.
const nativePrefix = "\x00native "

// nativeObject is the mapping a native frame belongs to: the kernel's, as
// perf names it, so rules tell kernel time from the code that made the
// call; the shared library async-profiler names as the frame's class
// ("libjvm.so", "libc.so.6"); else "[native]".
func nativeObject(f *frame) string {
	if f.Type == "Kernel" {
		return perfscript.KernelMapping
	}
	if lib := f.Method.Type.Name; strings.Contains(lib, ".so") {
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
	fnName, file := name, ""
	if native, ok := strings.CutPrefix(name, nativePrefix); ok {
		object, fn, _ := strings.Cut(native, "\x00")
		fnName, mapping = fn, b.nativeMapping(object)
	} else {
		file = sourceFile(name)
	}
	fn := b.functions[name]
	if fn == nil {
		fn = &profile.Function{ID: uint64(len(b.p.Function) + 1), Name: fnName, SystemName: fnName, Filename: file}
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
