package rules

import (
	"slices"

	"github.com/google/pprof/profile"

	"github.com/perfdoctor/perfdoctor/evidence"
	"github.com/perfdoctor/perfdoctor/facts"
	"github.com/perfdoctor/perfdoctor/facts/frames"
)

// ReadWaits is what perf's scheduler events show of a process's serving
// threads waiting for file reads to reach the device: DISK002's reading of
// a native server, which CFG001 weighs against the setting that sizes the
// server's cache. One computation for both, so the two findings state one
// figure.
type ReadWaits struct {
	// Law weighs the waits and the reads' CPU against the serving threads
	// and the process's CPUs.
	Law QueueLaw
	// Threads is the serving threads on average; Waiting the threads asleep
	// in a file read on average, Device the part of it in state D.
	Threads, Waiting, Device float64
	// Sleeps counts the sleeps in a file read (0 where the off-CPU profile
	// counts none).
	Sleeps float64
	// PathShare is the CPU samples' share in the file read path;
	// Completions the block layer's completions on other stacks, in the
	// part the reads are of the process's device waits.
	PathShare, Completions float64
	// Waited holds the read waits' samples (the off-CPU profile's).
	Waited *profile.Profile
	// OnCPU selects the reads' own CPU samples: the finding's claim.
	OnCPU func(evidence.Sample) bool
}

// FileReadWaits reads the serving threads' waits in file reads from perf's
// off-CPU profile (rules.ServingThreads tells the serving threads apart by
// perf's thread IDs): a serving thread asleep in a read of a file until
// the device completes it (frames.KernelFileRead under frames.IOWait),
// syncs, sockets and futexes aside. ok is false when the evidence has no
// off-CPU profile whose threads perf's thread IDs tell apart; a zero
// Waiting when none waited. st are the CPU samples the reads' CPU is read
// from (perf's, where they differ from the CPU profile), cpu those a claim
// selects in.
func FileReadWaits(ev *evidence.Evidence, st, cpu *evidence.Stacks, w facts.Work) (ReadWaits, bool) {
	var r ReadWaits
	off, on := ev.Profiles[evidence.OffCPU], ev.Profiles[evidence.Perf]
	serving := ServingThreads(PerfProfiles(ev))
	threads, ok := ServingThreadTime(on, off, serving)
	if !ok {
		return r, false
	}
	r.Threads = threads
	window := float64(off.DurationNanos)
	switches := -1 // the off-CPU profile's count of sleeps, where it has one
	for i, t := range off.SampleType {
		if t.Unit == "count" {
			switches = i
		}
	}
	r.Waited = off.Copy()
	r.Waited.Sample = nil
	for _, s := range off.Sample {
		tid := s.NumLabel["tid"]
		if len(tid) == 0 || !serving[tid[0]] || len(s.Value) == 0 || !ReadWait(s) {
			continue
		}
		v := float64(s.Value[0]) / window
		r.Waiting += v
		if slices.Contains(s.Label["state"], "D") {
			r.Device += v
		}
		if switches >= 0 && switches < len(s.Value) {
			r.Sleeps += float64(s.Value[switches])
		}
		r.Waited.Sample = append(r.Waited.Sample, s)
	}
	if r.Waiting == 0 {
		return r, true
	}
	// The reads' CPU: their own path, and the device's completions in the
	// part the reads are of the process's device waits.
	r.PathShare = st.ShareWhere(readOnCPU(st))
	r.Completions = st.ShareWhere(completionOnCPU(st)) * readShareOfDeviceWaits(off)
	r.Law = NewQueueLaw(r.PathShare+r.Completions, r.Waiting, threads, w)
	r.OnCPU = readOnCPU(cpu)
	return r, true
}

// ReadWait is a sleep in a file read until the device completes it.
func ReadWait(s *profile.Sample) bool {
	return InStack(s, frames.IOWait) && InStack(s, frames.KernelFileRead) &&
		!InStack(s, frames.DiskSync) && !InStack(s, frames.SocketIO) && !InStack(s, frames.FutexWait)
}

// readOnCPU is an on-CPU sample in a file read (submitting it, copying
// the data): the reads' own CPU, which a cache removes with them.
func readOnCPU(st *evidence.Stacks) func(evidence.Sample) bool {
	read, other := st.Has(frames.KernelFileRead), st.Has(evidence.Any(frames.DiskSync, frames.SocketIO))
	return func(sm evidence.Sample) bool { return read(sm) && !other(sm) }
}

// completionOnCPU is an on-CPU sample in the block layer's completion of a
// device request outside any file read or write (an interrupt on another
// stack): the reads' too where the process's device waits are reads.
func completionOnCPU(st *evidence.Stacks) func(evidence.Sample) bool {
	done := st.Has(frames.KernelIOCompletion)
	inPath := st.Has(evidence.Any(frames.KernelFileRead, frames.KernelFileWrite, frames.DiskSync))
	return func(sm evidence.Sample) bool { return done(sm) && !inPath(sm) }
}

// readShareOfDeviceWaits is the part of all of the process's threads'
// waits for the device (frames.IOWait) that are file reads: the share of
// the block layer's completions that are the reads'.
func readShareOfDeviceWaits(off *profile.Profile) float64 {
	var reads, all int64
	for _, s := range off.Sample {
		if len(s.Value) == 0 || !InStack(s, frames.IOWait) {
			continue
		}
		all += s.Value[0]
		if ReadWait(s) {
			reads += s.Value[0]
		}
	}
	if all == 0 {
		return 0
	}
	return float64(reads) / float64(all)
}
