package rules

import (
	"fmt"
	"maps"
	"math"
	"slices"

	"github.com/google/pprof/profile"

	"github.com/perfdoctor/perfdoctor/evidence"
	"github.com/perfdoctor/perfdoctor/facts"
	"github.com/perfdoctor/perfdoctor/facts/frames"
	"github.com/perfdoctor/perfdoctor/internal/human"
)

// What perf's thread IDs tell about a native process's threads, and the
// queue's law for a wait on their request path: shared by the rules that
// read a wait from perf's scheduler events (DISK001's syncs, DISK002's
// reads).

// InStack reports whether a frame of the sample matches m.
func InStack(s *profile.Sample, m evidence.Matcher) bool {
	return slices.ContainsFunc(s.Location, func(l *profile.Location) bool {
		return slices.ContainsFunc(l.Line, func(ln profile.Line) bool { return ln.Function != nil && m(ln.Function.Name) })
	})
}

// PerfProfiles are the bundle's perf recordings: the scheduler events'
// off-CPU profile and the on-CPU samples, where present.
func PerfProfiles(ev *evidence.Evidence) []*profile.Profile {
	return slices.DeleteFunc([]*profile.Profile{ev.Profiles[evidence.OffCPU], ev.Profiles[evidence.Perf]},
		func(p *profile.Profile) bool { return p == nil })
}

// ServingThreads are the threads perf saw in socket work (frames.
// SocketIO), on the CPU or blocked, in the bundle's perf recordings
// (PerfProfiles): the threads that serve connections. It is nil when the
// profiles carry no thread IDs or perf saw no thread in socket work (then
// which thread serves is not known).
func ServingThreads(profiles []*profile.Profile) map[int64]bool {
	serving, labelled := map[int64]bool{}, false // by thread ID
	for _, p := range profiles {
		for _, s := range p.Sample {
			if tid := s.NumLabel["tid"]; len(tid) > 0 {
				labelled = true
				if !serving[tid[0]] && InStack(s, frames.SocketIO) {
					serving[tid[0]] = true
				}
			}
		}
	}
	if !labelled || len(serving) == 0 {
		return nil
	}
	return serving
}

// CPUNanos returns a sample's on-CPU time in nanoseconds: perf's
// cpu-clock value where the profile has one, else its count times the
// sampling period.
func CPUNanos(p *profile.Profile) func(*profile.Sample) float64 {
	for i, st := range p.SampleType {
		if st.Unit == "nanoseconds" {
			return func(s *profile.Sample) float64 {
				if i < len(s.Value) {
					return float64(s.Value[i])
				}
				return 0
			}
		}
	}
	period := float64(p.Period)
	return func(s *profile.Sample) float64 { return float64(s.Value[0]) * period }
}

// ServingThreadTime is the serving threads' time, on the CPU (on, perf's
// samples) and off it (off, its scheduler events), in thread-seconds per
// second of off's window: how many serving threads there were on average.
// A thread seen for most of the window lived through all of it: the
// scheduler events miss the sleep it was in when the recording started
// (redis's one serving thread was seen for 17.1 s of 20). Threads forked
// and gone within the window are seen whole. ok is false without both
// profiles, thread IDs or a window.
func ServingThreadTime(on, off *profile.Profile, serving map[int64]bool) (threads float64, ok bool) {
	if off == nil || on == nil || off.DurationNanos <= 0 || len(off.SampleType) == 0 || serving == nil {
		return 0, false
	}
	window := float64(off.DurationNanos)
	ns := CPUNanos(on)
	seen := map[int64]float64{} // serving thread -> its time seen, of the window
	for _, s := range on.Sample {
		if tid := s.NumLabel["tid"]; len(tid) > 0 && len(s.Value) > 0 && serving[tid[0]] {
			seen[tid[0]] += ns(s) / window
		}
	}
	for _, s := range off.Sample {
		if tid := s.NumLabel["tid"]; len(tid) > 0 && len(s.Value) > 0 && serving[tid[0]] {
			seen[tid[0]] += float64(s.Value[0]) / window
		}
	}
	// In thread order: a float sum in the map's order differs in its last
	// digits from run to run.
	for _, tid := range slices.Sorted(maps.Keys(seen)) {
		share := seen[tid]
		if share >= 0.5 {
			share = 1
		}
		threads += share
	}
	return threads, threads > 0
}

// QueueLaw is a wait on the request path of a process whose serving
// threads, each request holding one for its CPU time and its waits, set
// its rate (docs/ranking.md, "Gains that match the fix", item 3): the share
// of the threads' time a fix removing the wait gives back.
type QueueLaw struct {
	// OfWindow is the wait's share of all of the serving threads' time,
	// OfBusy of their busy time (on the CPU or in the wait); the rest of
	// their time, idle, is their clients'. The share removed lies between
	// the two.
	OfWindow, OfBusy float64
	// Cap is the most the fix can remove before the process would use all
	// of its CPUs, at the CPU per unit left without the wait's: 1 where
	// the CPUs it may use are not known.
	Cap float64
	// Cores and Available are the CPUs the process used and may use.
	Cores, Available float64
}

// NewQueueLaw weighs a wait of waiting thread-seconds a second (off the
// CPU, in the wait and queued behind it) and cpuShare of the process's
// CPU samples (the wait's own work on the CPU) against threads serving
// threads on average (ServingThreadTime; 1 where perf's thread IDs do not
// say) and the process's CPUs (w.Cores used of w.Available).
func NewQueueLaw(cpuShare, waiting, threads float64, w facts.Work) QueueLaw {
	in := cpuShare*w.Cores + waiting // thread-seconds per second
	q := QueueLaw{
		OfWindow: min(in/max(threads, in), 0.999),
		OfBusy:   min(in/(w.Cores+waiting), 0.999),
		Cap:      1, Cores: w.Cores, Available: w.Available,
	}
	if w.Available > w.Cores {
		q.Cap = 1 - w.Cores*(1-cpuShare)/w.Available
	}
	return q
}

// Range is the share removed: from the wait's share of all of the serving
// threads' time (times lowFactor, where the fix recovers only part of the
// wait) to its share of their busy time, neither above Cap; mid is the
// middle of the two gains, in log. capped says Cap bound the top.
func (q QueueLaw) Range(lowFactor float64) (low, high, mid float64, capped bool) {
	low, high = q.OfWindow*lowFactor, max(q.OfBusy, q.OfWindow)
	if high > q.Cap {
		high, low, capped = q.Cap, min(low, q.Cap), true
	}
	return low, high, 1 - math.Sqrt((1-low)*(1-high)), capped
}

// CapNote is the clause an impact basis adds when Cap bound the range.
func (q QueueLaw) CapNote() string {
	return fmt.Sprintf("; at most %s, where the process would use all %s of its cores", human.Percent(q.Cap), human.Number(q.Available))
}
