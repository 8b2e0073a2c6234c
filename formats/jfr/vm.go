package jfr

import (
	"sort"
	"strconv"
	"strings"
	"time"
)

// VM is what a recording says about the virtual machine's own work beyond
// the collector's pauses: safepoints and the operations run in them,
// threads stalled waiting for memory, the code cache, and how the
// execution sampler saw the stacks.
type VM struct {
	// Safepoints counts jdk.SafepointBegin events. TimeToSafepoint sums
	// their durations: from the VM asking every thread to stop to all of
	// them stopped (and the safepoint's cleanup), time in which the threads
	// already stopped wait for the last. TimeToSafepointMax is the longest,
	// for the operation TimeToSafepointMaxOp.
	Safepoints           int           `json:"safepoints"`
	TimeToSafepoint      time.Duration `json:"time_to_safepoint_ns"`
	TimeToSafepointMax   time.Duration `json:"time_to_safepoint_max_ns"`
	TimeToSafepointMaxOp string        `json:"time_to_safepoint_max_operation,omitempty"`
	// SlowSafepointSites is the code that kept safepoints waiting: where
	// late threads reached their safepoint poll (jdk.SafepointLatency, JDK
	// 24 and later when enabled; longest in total first), else the code the
	// execution sampler found running while a safepoint waited 5 ms or more
	// (with every other thread stopped; most samples first).
	SlowSafepointSites []Site `json:"slow_safepoint_sites,omitempty"`
	// Operations are the VM operations (jdk.ExecuteVMOperation) by name,
	// the longest in total first.
	Operations []VMOperation `json:"vm_operations,omitempty"`

	// AllocationStalls are ZGC's jdk.ZAllocationStall events: a thread
	// waiting for the collector to free memory before it can allocate.
	AllocationStalls Stalls `json:"allocation_stalls"`
	// EvacuationFailures counts G1's jdk.EvacuationFailed events: a young
	// collection found no room to copy live objects (to-space exhausted).
	EvacuationFailures int `json:"evacuation_failures"`

	// CodeCache is each code heap's last jdk.CodeCacheStatistics, and
	// CodeCacheFull counts jdk.CodeCacheFull events (the JIT stopped
	// compiling into a full heap).
	CodeCache     []CodeHeap `json:"code_cache,omitempty"`
	CodeCacheFull int        `json:"code_cache_full_events"`

	// Stacks describes the CPU execution samples' stack traces.
	Stacks SampledStacks `json:"stacks"`
	// FlagsRecorded is set when the recording holds jdk.BooleanFlag events;
	// DebugNonSafepoints is the flag's value then (diagnostic flags are
	// only listed when unlocked, so an absent flag is its default, off).
	// CountedLoopSafepoints is UseCountedLoopSafepoints: whether the JIT
	// keeps safepoint polls inside counted (int-indexed) loops.
	FlagsRecorded         bool `json:"flags_recorded,omitempty"`
	DebugNonSafepoints    bool `json:"debug_non_safepoints,omitempty"`
	CountedLoopSafepoints bool `json:"counted_loop_safepoints,omitempty"`
	// Profiler names the profiler that wrote the recording's samples when
	// it is not the JDK's own (async-profiler records its version).
	Profiler string `json:"profiler,omitempty"`
}

// VMOperation is one kind of VM operation over the recording.
type VMOperation struct {
	Name string `json:"name"`
	// AtSafepoint is set when the operation stops every Java thread
	// (others run in handshakes or concurrently).
	AtSafepoint bool          `json:"at_safepoint"`
	Count       int           `json:"count"`
	Total       time.Duration `json:"total_ns"`
	Max         time.Duration `json:"max_ns"`
	// TimeToSafepoint is the time its safepoints took to be reached.
	TimeToSafepoint time.Duration `json:"time_to_safepoint_ns"`
	// Callers are the threads that asked for it most often ("Attach
	// Listener" is jcmd and the JDK's tools), at most four.
	Callers []string `json:"callers,omitempty"`
}

// Stalls sums one kind of stall event.
type Stalls struct {
	Count int           `json:"count"`
	Total time.Duration `json:"total_ns"`
	Max   time.Duration `json:"max_ns"`
	// Stalled is the time at least one thread was stalled: the stalls'
	// union, shorter than Total when threads stall together.
	Stalled time.Duration `json:"stalled_ns"`
	Threads int           `json:"threads"`
	// Sites are the code that stalled, the longest in total first.
	Sites []Site `json:"sites,omitempty"`
}

// Site is a place in the code: the first frame outside the JDK of a stack
// (or its top frame when all are the JDK's), with how often and how long
// it was seen.
type Site struct {
	Function string        `json:"function"`
	Line     int64         `json:"line,omitempty"`
	Count    int           `json:"count"`
	Time     time.Duration `json:"time_ns,omitempty"`
}

// CodeHeap is one code heap (the whole code cache when it is not
// segmented) at its last statistics event.
type CodeHeap struct {
	Name        string `json:"name"`
	Size        int64  `json:"size_bytes"`
	Unallocated int64  `json:"unallocated_bytes"`
	Entries     int64  `json:"entries"`
	// FullCount is how many times the heap was full since the JVM started.
	FullCount int64 `json:"full_count"`
}

// Used is the share of the heap in use.
func (h CodeHeap) Used() float64 {
	if h.Size <= 0 {
		return 0
	}
	return float64(h.Size-min(h.Unallocated, h.Size)) / float64(h.Size)
}

// SampledStacks counts the CPU execution samples' stack traces.
type SampledStacks struct {
	Samples int `json:"samples"`
	// Truncated counts stacks cut at the recording's stack depth (JFR's
	// truncated flag); MaxDepth is the deepest stack kept, and AtMaxDepth
	// counts the stacks of that depth (a profiler that does not flag cut
	// stacks leaves them at its depth limit).
	Truncated  int `json:"truncated"`
	MaxDepth   int `json:"max_depth"`
	AtMaxDepth int `json:"at_max_depth"`
	// Interpreted counts samples whose top frame ran in the interpreter.
	Interpreted int `json:"interpreted"`
}

// Bounds on what the VM accumulator keeps, so a hostile or huge
// recording cannot grow it without end.
const (
	maxVMOperations = 256
	maxStallSpans   = 1 << 20
	maxSampleTimes  = 1 << 21
	maxSlowSafe     = 1 << 16
	// slowSafepoint is the time to safepoint from which the code running
	// in it is looked for.
	slowSafepoint = 5 * time.Millisecond
)

// vmAcc accumulates the VM's events; finish fills VM.
type vmAcc struct {
	ops          map[string]*VMOperation
	opSafepoint  map[string][]int64 // operation -> safepoint IDs
	opCallers    map[string]map[string]int
	ttsp         map[int64]time.Duration
	slow         []span
	samples      []stampedSite
	stallSpans   []span
	stallThreads map[string]bool
	stallSites   map[frameKey]*Site
	lateSites    map[frameKey]*Site // jdk.SafepointLatency
	codeHeaps    map[string]*codeHeapAt
}

type (
	span        struct{ start, end time.Time }
	stampedSite struct {
		t    time.Time
		site frameKey
	}
	frameKey struct {
		fn   string
		line int64
	}
	codeHeapAt struct {
		at   time.Time
		heap CodeHeap
	}
)

func newVMAcc() *vmAcc {
	return &vmAcc{
		ops: map[string]*VMOperation{}, opSafepoint: map[string][]int64{}, opCallers: map[string]map[string]int{}, ttsp: map[int64]time.Duration{},
		stallThreads: map[string]bool{}, stallSites: map[frameKey]*Site{}, lateSites: map[frameKey]*Site{}, codeHeaps: map[string]*codeHeapAt{},
	}
}

// addVM reads the VM's own events.
func (c *converter) addVM(typ string, v *values) {
	vm, a := &c.sum.VM, c.vm
	dur := max(time.Duration(v.Duration), 0)
	switch typ {
	case "SafepointBegin":
		vm.Safepoints++
		vm.TimeToSafepoint += dur
		if len(a.ttsp) < maxSlowSafe*16 {
			a.ttsp[v.SafepointID] = dur
		}
		if dur >= slowSafepoint && len(a.slow) < maxSlowSafe {
			a.slow = append(a.slow, span{v.StartTime, v.StartTime.Add(dur)})
		}
	case "ExecuteVMOperation":
		op := a.ops[v.Operation]
		if op == nil {
			if len(a.ops) >= maxVMOperations {
				return
			}
			op = &VMOperation{Name: v.Operation}
			a.ops[v.Operation] = op
		}
		op.Count++
		op.Total += dur
		op.Max = max(op.Max, dur)
		op.AtSafepoint = op.AtSafepoint || v.Safepoint
		if v.Safepoint && len(a.opSafepoint[v.Operation]) < maxSlowSafe {
			a.opSafepoint[v.Operation] = append(a.opSafepoint[v.Operation], v.SafepointID)
		}
		callers := a.opCallers[v.Operation]
		if callers == nil {
			callers = map[string]int{}
			a.opCallers[v.Operation] = callers
		}
		if name := v.Caller.name(); name != "" && (len(callers) < 64 || callers[name] > 0) {
			callers[name]++
		}
	case "ZAllocationStall":
		s := &vm.AllocationStalls
		s.Count++
		s.Total += dur
		s.Max = max(s.Max, dur)
		if len(a.stallSpans) < maxStallSpans {
			a.stallSpans = append(a.stallSpans, span{v.StartTime, v.StartTime.Add(dur)})
		}
		if name := v.EventThread.name(); name != "" && len(a.stallThreads) < 100_000 {
			a.stallThreads[name] = true
		}
		countSite(a.stallSites, v.StackTrace, dur)
	case "SafepointLatency":
		countSite(a.lateSites, v.StackTrace, dur)
	case "GCCPUTime":
		c.sum.GC.CPU += max(time.Duration(v.UserTime), 0) + max(time.Duration(v.SystemTime), 0)
		c.sum.GC.CPUCollections++
	case "GCPhaseConcurrent":
		c.sum.GC.Concurrent += dur
	case "EvacuationFailed":
		vm.EvacuationFailures++
	case "CodeCacheFull":
		vm.CodeCacheFull++
		a.codeHeap(v)
	case "CodeCacheStatistics":
		a.codeHeap(v)
	case "BooleanFlag":
		vm.FlagsRecorded = true
		switch v.Name {
		case "DebugNonSafepoints":
			vm.DebugNonSafepoints = rawString(v.Value) == "true"
		case "UseCountedLoopSafepoints":
			vm.CountedLoopSafepoints = rawString(v.Value) == "true"
		}
	case "ActiveSetting":
		// async-profiler records its options as settings, its version among them.
		if v.Name == "version" && vm.Profiler == "" {
			vm.Profiler = "async-profiler " + rawString(v.Value)
		}
	}
}

// addSample counts a CPU execution sample's stack and keeps its time and
// site, to find the code running while safepoints waited.
func (c *converter) addSample(v *values) {
	st, a := &c.sum.VM.Stacks, c.vm
	st.Samples++
	if v.StackTrace == nil {
		return
	}
	if v.StackTrace.Truncated {
		st.Truncated++
	}
	switch depth := len(v.StackTrace.Frames); {
	case depth > st.MaxDepth:
		st.MaxDepth, st.AtMaxDepth = depth, 1
	case depth == st.MaxDepth:
		st.AtMaxDepth++
	}
	if fr := v.StackTrace.Frames; len(fr) > 0 && fr[0].Type == "Interpreted" {
		st.Interpreted++
	}
	if k, ok := siteOf(v.StackTrace); ok && len(a.samples) < maxSampleTimes {
		a.samples = append(a.samples, stampedSite{v.StartTime, k})
	}
}

// countSite adds an event of duration dur to the site of its stack.
func countSite(sites map[frameKey]*Site, st *stackTrace, dur time.Duration) {
	k, ok := siteOf(st)
	if !ok {
		return
	}
	site := sites[k]
	if site == nil {
		if len(sites) >= 100_000 {
			return
		}
		site = &Site{Function: k.fn, Line: k.line}
		sites[k] = site
	}
	site.Count++
	site.Time += dur
}

func (a *vmAcc) codeHeap(v *values) {
	h := a.codeHeaps[v.CodeBlobType]
	if h == nil {
		if len(a.codeHeaps) >= 16 {
			return
		}
		h = &codeHeapAt{}
		a.codeHeaps[v.CodeBlobType] = h
	}
	if !h.at.IsZero() && v.StartTime.Before(h.at) {
		return
	}
	h.at = v.StartTime
	h.heap = CodeHeap{Name: v.CodeBlobType, Size: max(v.ReservedTopAddress-v.StartAddress, 0),
		Unallocated: max(v.UnallocatedCapacity, 0), Entries: v.EntryCount, FullCount: v.FullCount}
}

// finish fills the summary's VM from what was accumulated.
func (a *vmAcc) finish(vm *VM) {
	// The longest time to safepoint, and the operation that asked for it.
	var maxID int64
	for id, d := range a.ttsp {
		if d > vm.TimeToSafepointMax || d == vm.TimeToSafepointMax && id < maxID {
			vm.TimeToSafepointMax, maxID = d, id
		}
	}
	for name, op := range a.ops {
		for _, id := range a.opSafepoint[name] {
			op.TimeToSafepoint += a.ttsp[id]
			if id == maxID && vm.TimeToSafepointMax > 0 {
				vm.TimeToSafepointMaxOp = name
			}
		}
		op.Callers = mostOften(a.opCallers[name], 4)
		vm.Operations = append(vm.Operations, *op)
	}
	sort.Slice(vm.Operations, func(i, j int) bool {
		x, y := vm.Operations[i], vm.Operations[j]
		if x.Total != y.Total {
			return x.Total > y.Total
		}
		return x.Name < y.Name
	})
	vm.SlowSafepointSites = sitesIn(a.samples, a.slow)
	if len(a.lateSites) > 0 {
		vm.SlowSafepointSites = sortedSites(a.lateSites)
	}

	s := &vm.AllocationStalls
	s.Stalled = union(a.stallSpans)
	s.Threads = len(a.stallThreads)
	s.Sites = sortedSites(a.stallSites)

	for _, h := range a.codeHeaps {
		vm.CodeCache = append(vm.CodeCache, h.heap)
	}
	sort.Slice(vm.CodeCache, func(i, j int) bool { return vm.CodeCache[i].Name < vm.CodeCache[j].Name })
}

// sitesIn counts the sampled sites that ran inside the spans.
func sitesIn(samples []stampedSite, spans []span) []Site {
	if len(samples) == 0 || len(spans) == 0 {
		return nil
	}
	sort.Slice(samples, func(i, j int) bool { return samples[i].t.Before(samples[j].t) })
	count := map[frameKey]int{}
	for _, sp := range spans {
		i := sort.Search(len(samples), func(i int) bool { return !samples[i].t.Before(sp.start) })
		for ; i < len(samples) && !samples[i].t.After(sp.end); i++ {
			count[samples[i].site]++
		}
	}
	var out []Site
	for k, n := range count {
		out = append(out, Site{Function: k.fn, Line: k.line, Count: n})
	}
	return sortSites(out)
}

func sortedSites(m map[frameKey]*Site) []Site {
	var out []Site
	for _, s := range m {
		out = append(out, *s)
	}
	return sortSites(out)
}

// sortSites orders sites by time, then count, then name, and keeps eight.
func sortSites(s []Site) []Site {
	sort.Slice(s, func(i, j int) bool {
		if s[i].Time != s[j].Time {
			return s[i].Time > s[j].Time
		}
		if s[i].Count != s[j].Count {
			return s[i].Count > s[j].Count
		}
		return s[i].Function+strconv.FormatInt(s[i].Line, 10) < s[j].Function+strconv.FormatInt(s[j].Line, 10)
	})
	return s[:min(len(s), 8)]
}

// union is the total time covered by the spans.
func union(spans []span) time.Duration {
	sort.Slice(spans, func(i, j int) bool { return spans[i].start.Before(spans[j].start) })
	var total time.Duration
	var cur span
	for i, sp := range spans {
		if i == 0 || sp.start.After(cur.end) {
			total += cur.end.Sub(cur.start)
			cur = sp
			continue
		}
		if sp.end.After(cur.end) {
			cur.end = sp.end
		}
	}
	return total + cur.end.Sub(cur.start)
}

// siteOf is a stack's first frame outside the JDK, else its top frame.
func siteOf(st *stackTrace) (frameKey, bool) {
	if st == nil || len(st.Frames) == 0 {
		return frameKey{}, false
	}
	for i := range st.Frames {
		f := &st.Frames[i]
		if isNativeFrame(f) {
			continue
		}
		if name := frameName(f); !isJDKFrame(name) {
			return frameKey{name, f.LineNumber}, true
		}
	}
	return frameKey{frameName(&st.Frames[0]), st.Frames[0].LineNumber}, true
}

func isJDKFrame(name string) bool {
	for _, p := range []string{"java.", "javax.", "jdk.", "sun.", "com.sun."} {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// mostOften is the n keys counted most, ties by name.
func mostOften(count map[string]int, n int) []string {
	keys := make([]string, 0, len(count))
	for k := range count {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if count[keys[i]] != count[keys[j]] {
			return count[keys[i]] > count[keys[j]]
		}
		return keys[i] < keys[j]
	})
	return keys[:min(len(keys), n)]
}
