// Package syncdisk detects requests waiting for their own writes to reach
// the disk: an fsync or fdatasync per request on the request path (finding
// class sync-disk-write).
package disk001

import (
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/perfdoctor/perfdoctor/facts"

	"github.com/perfdoctor/perfdoctor/evidence"
	"github.com/perfdoctor/perfdoctor/evidence/trace"
	"github.com/perfdoctor/perfdoctor/facts/frames"
	"github.com/perfdoctor/perfdoctor/internal/human"
	"github.com/perfdoctor/perfdoctor/rules"
)

// Rule is DISK001.
var Rule = &rules.Rule{
	ID:    "DISK001",
	Class: "sync-disk-write",
	Doc: rules.Doc{
		Title: "Requests wait for their own fsync: one disk sync per write on the request path",
		Text: `An fsync or fdatasync waits for the device to confirm the data is durable:
hundreds of microseconds on a good SSD, milliseconds on networked or busy
disks, and it does not use CPU while it waits, so a CPU profile barely shows
it (etcd's WAL fdatasync at 6% of CPU set its whole put latency). When each
request syncs its own write, and the writes share a lock or a file, requests
queue behind each other's syncs: throughput is one request per sync and p99
is the queue of syncs. Group commit makes one sync cover every request that
arrived during the previous one.`,
		Evidence: `The execution trace's system calls by calling site: calls whose stack holds
a sync (os.(*File).Sync, syscall.Fsync/Fdatasync, golang.org/x/sys/unix's
Fsync/Fdatasync): their count, time and longest call, the share of the
window with a sync in flight, file writes per sync, and whether the syncing
goroutine is serving a request (net/http's conn.serve, a gRPC handler) or a
background committer. On the request path: medium from 20% of the window in
syncs, high from 50%. From a background goroutine the syncs are already
batched: the finding is informational (the sync time is the latency floor).
Without a trace, perf or CPU-profile samples inside fsync/fdatasync (user or
kernel frames) from 3% of CPU give an on-CPU-only view, at most medium, and
medium whenever the block profile shows requests queued behind the syncs
(half a goroutine or more waiting on average on a lock in the code that
syncs). perf's sched_switch events (collect --perf, where the kernel permits
them) add the waits themselves: threads waiting in a sync per second of the
window, graded as the trace's syncs in flight. perf's thread IDs tell who syncs:
when the threads that serve connections (perf saw them in socket work) do
not, and a thread that never touches a socket does (redis's bio thread under
appendfsync everysec, a database's WAL writer), the syncs are a background
committer's and the finding is informational. The serving threads' futex
sleeps (a native program's locks, condition variables and semaphores) are
a queue behind the syncs when at least half of the futex wake-ups perf
sampled are in the code calling the sync: a group commit, where one
thread flushes and those committing meanwhile sleep until it wakes them
(PostgreSQL's backends on the WAL write lock, 3.6 thread-seconds a second
against 0.7 in fdatasync itself). The finding says which sources it used.`,
		Fix: `Group commit: queue the records, let one goroutine write everything queued
and sync once, then acknowledge all of the waiting requests (etcd's WAL and
most databases do this). Where the durability contract allows, sync on a
timer instead (redis appendfsync everysec, a database's commit delay), and
keep the log on a device with low sync latency (local NVMe, not a network
disk).`,
		Before: `mu.Lock(); f.Write(rec); f.Sync(); mu.Unlock()   // per request`,
		After:  `queue <- rec; <-done   // one committer: write(batch); f.Sync(); signal all`,
		Caveats: `Group commit keeps each request's durability: it is acknowledged only after
its sync. A timer-based sync is not: a crash loses up to one interval of
acknowledged writes.`,
		Since: "0.2",
		Refs:  []string{"https://etcd.io/docs/v3.5/tuning/#disk", "https://redis.io/docs/latest/operate/oss_and_stack/management/persistence/"},
	},
	Needs: []rules.Input{rules.CPU},
	Uses:  []rules.Input{rules.Trace, rules.Perf, rules.System},
	Facts: []facts.Key{facts.CPUStacks, facts.PerfStacks, facts.SystemFrames, facts.WorkDone},
	Check: check,
}

const (
	mediumInFlight, highInFlight = 0.20, 0.50
	minInFlight                  = 0.05
	// minCPUShare is where on-CPU samples alone start to speak: a sync's
	// CPU is a sliver of its wall time. Debian's etcd 3.4 (no trace), whose
	// WAL fdatasync sets its put latency, showed 6-7% on a quiet machine
	// and under 5% beside other tests.
	minCPUShare    = 0.03
	minSyncSamples = 10 // a waiting process is on a CPU little: few samples are the norm
	// groupCommitGain is the share of sync time group commit recovers:
	// in case L1 it served 2.4x the requests on the same disk.
	groupCommitGain = 0.5
)

// syncCall is a Go sync's wrappers; onRequestPath is a goroutine serving a request.
var (
	syncCall      = frames.GoSync
	fileWrite     = evidence.FuncPrefix("os.(*File).Write", "os.(*File).WriteAt", "os.(*File).WriteString")
	onRequestPath = evidence.FuncPrefix("net/http.(*conn).serve", "google.golang.org/grpc.(*Server).processUnaryRPC",
		"google.golang.org/grpc.(*Server).processStreamingRPC", "github.com/valyala/fasthttp.(*Server).serveConn")
	// nativeSync is a sync in perf's or a CPU profile's frames: Go's
	// wrappers, libc's, and the kernel's entry points.
	nativeSync = frames.DiskSync
)

// syncs is the trace's sync calls added up.
type syncs struct {
	count, onPath, writes int64
	total                 time.Duration
	max                   time.Duration
	caller                *trace.Frame
	callerTime            time.Duration
}

func collect(s *trace.Summary) syncs {
	var out syncs
	callers := map[trace.Frame]time.Duration{}
	for _, site := range s.Syscalls() {
		if site.HasFunc(fileWrite) && !site.HasFunc(syncCall) {
			out.writes += site.Count
			continue
		}
		if !site.HasFunc(syncCall) {
			continue
		}
		out.count += site.Count
		out.total += site.Total
		out.max = max(out.max, site.Max)
		if site.HasFunc(onRequestPath) {
			out.onPath += site.Count
		}
		for _, f := range site.Stack {
			if rules.IsApplication(f.Func) {
				callers[f] += site.Total
				break
			}
		}
	}
	for f, d := range callers {
		if d > out.callerTime || d == out.callerTime && out.caller != nil && f.Func < out.caller.Func {
			f := f
			out.caller, out.callerTime = &f, d
		}
	}
	return out
}

func check(pass *rules.Pass) error {
	s, err := pass.Evidence.Trace()
	switch {
	case errors.Is(err, evidence.ErrNoTrace):
		return fromSamples(pass)
	case err != nil:
		pass.Skip("the execution trace could not be read: " + err.Error())
		return fromSamples(pass)
	}
	if s.Window <= 0 {
		return nil
	}
	sy := collect(s)
	if sy.count == 0 {
		return nil
	}
	window := s.Window.Seconds()
	inFlight := sy.total.Seconds() / window
	pathShare := float64(sy.onPath) / float64(sy.count)
	shown := []rules.Fact{
		rules.Count("syncs per second (fsync, fdatasync)", float64(sy.count)/window, "/s"),
		rules.Duration("mean time in one sync", sy.total/time.Duration(sy.count)),
		rules.Duration("longest sync", sy.max),
		rules.Share("window with a sync in flight", min(inFlight, 1)),
		rules.Share("syncs made by goroutines serving a request", pathShare),
	}
	if sy.writes > 0 {
		shown = append(shown, rules.Count("file writes per sync", float64(sy.writes)/float64(sy.count), ""))
	}
	shown = append(shown, rules.Text("source", fmt.Sprintf("execution trace, %s", human.RoundDuration(s.Window))))
	f := rules.Finding{
		Resource: "latency",
		Evidence: shown,
		Fix:      pass.Rule.Doc.Fix,
		Example:  pass.Rule.Doc.Before + "\n->\n" + pass.Rule.Doc.After,
		Caveats:  []string{pass.Rule.Doc.Caveats},
		Frames:   facts.Get(pass.Facts, facts.CPUStacks).Matched(nativeSync, 8),
	}
	if sy.caller != nil {
		f.Locations = []rules.Location{{Function: sy.caller.Func, File: sy.caller.File, Line: sy.caller.Line,
			Share: sy.callerTime.Seconds() / sy.total.Seconds(), Role: "code syncing (share of sync time)"}}
	}
	mean := human.RoundDuration(sy.total / time.Duration(sy.count))
	if pathShare >= 0.5 {
		if inFlight < minInFlight {
			return nil
		}
		f.Severity = rules.Grade(inFlight, mediumInFlight, highInFlight)
		f.Impact = min(inFlight, 1) * groupCommitGain
		f.ImpactBasis = "share of the window with a sync in flight on the request path; group commit served 2.4x the requests on the same disk in case L1, about half of that time back"
		f.Summary = fmt.Sprintf("Each request waits for its own fsync: %s syncs/s on the request path, %s each, a sync in flight %s of the time",
			human.Number(float64(sy.onPath)/window), mean, human.Percent(min(inFlight, 1)))
		shown = append(shown, rules.Count("requests per sync (each handler syncs its own write)", 1, ""))
		f.Evidence = shown
	} else {
		// A background committer: already batched, the sync time is the floor
		// of the latency of every write that waits for it.
		f.Severity = rules.Info
		f.ImpactBasis = backgroundBasis
		f.Summary = fmt.Sprintf("Writes wait for a background fsync: %s syncs/s, %s each (longest %s); that is the floor of a durable write's latency",
			human.Number(float64(sy.count)/window), mean, human.RoundDuration(sy.max))
		f.Example, f.Caveats = "", nil
		f.Fix = backgroundFix
	}
	if sy.caller != nil {
		f.Summary += ", from " + rules.ShortFunc(sy.caller.Func)
	}
	pass.Report(f)
	return nil
}

// A background committer's syncs are already batched: what is left is the
// storage's sync latency.
const (
	backgroundBasis = "syncs are already made off the request path; only faster storage or fewer syncs lower the floor"
	backgroundFix   = "Syncs are already batched by a background goroutine or thread. Lower their latency with storage that syncs faster " +
		"(local NVMe; not a network or throttled disk), and check the batch each sync covers grows with load."
)

// storeSettings are the durability settings of the data stores whose sync
// per write perf shows by their process name: the user's levers, since
// their code is not the user's to change.
var storeSettings = map[string]string{
	"redis-server": "redis is configured with appendfsync always: every write command waits for an fdatasync. Use appendfsync everysec " +
		"(at most one second of writes lost on a crash) unless each write must be durable before its reply, and keep " +
		"the AOF on a device with low sync latency.",
	"postgres": "PostgreSQL flushes the WAL at every commit (synchronous_commit = on): each transaction waits for an fdatasync. " +
		"Where a transaction may be lost on a crash without corrupting anything (the last few hundred ms, by wal_writer_delay), " +
		"set synchronous_commit = off for it (per session or per transaction); with many concurrent committers, commit_delay " +
		"(e.g. 1000 with commit_siblings = 5) lets one flush cover several commits; keep pg_wal on a device with low sync " +
		"latency (pg_test_fsync measures it).",
	"mysqld": "MySQL flushes the redo log at every commit (innodb_flush_log_at_trx_commit = 1) and may sync the binary log " +
		"too (sync_binlog = 1). Where a second of transactions may be lost on a crash, innodb_flush_log_at_trx_commit = 2; " +
		"keep the redo log on a device with low sync latency.",
}

// minQueued is the average number of goroutines queued behind the syncing
// code from which, without a trace, the syncs are a medium finding: the
// requests wait for each other's syncs.
const minQueued = 0.5

// queuedBehindSyncs reads the block profile for goroutines waiting on a
// lock in code that syncs (a function on the CPU profile's stacks above a
// sync): the requests that queue behind each other's fsync, as in a log
// whose lock is held across the sync. It returns the average number
// waiting, where, and the block profile's window.
func queuedBehindSyncs(ev *evidence.Evidence, st *evidence.Stacks) (float64, evidence.Frame, time.Duration, bool) {
	w, ok := ev.BlockWaits()
	if !ok || w.Window <= 0 || st == nil {
		return 0, evidence.Frame{}, 0, false
	}
	syncs := st.FrameHits(nativeSync)
	syncPath := map[string]bool{}
	for _, sm := range st.Samples {
		if slices.ContainsFunc(sm.Frames, func(id int32) bool { return syncs[id] }) {
			for _, id := range sm.Frames {
				if fn := st.Frames[id].Func; rules.IsApplication(fn) && !nativeSync(fn) {
					syncPath[fn] = true
				}
			}
		}
	}
	var queued time.Duration
	var at evidence.Frame
	for _, s := range w.Sites {
		if s.Mechanism != "lock" {
			continue
		}
		if where := s.Where(); syncPath[where.Func] {
			if queued == 0 {
				at = where
			}
			queued += s.Delay
		}
	}
	if queued == 0 {
		return 0, evidence.Frame{}, 0, false
	}
	return w.PerSecond(queued), at, w.Window, true
}

// waitShare restates a sync finding of a process that is not CPU-bound in
// request time, by the queue's law: its serving threads, not its CPUs, set
// the rate, and each request holds a thread for its CPU time and its wait
// for the device, and for the syncs it queues behind (q, where perf's
// thread IDs and the futex wake-ups show them). Moving the sync off the
// request path removes all of it. The serving threads' time is at least
// their busy time (on the CPU or waiting in or behind a sync) and at most
// all of their time (then the rest is idle, waiting for the clients): the
// share removed lies between the sync's share of the threads' time and its
// share of their busy time, and the point is the middle of the two gains,
// in log. Neither end can give more than the process's CPUs allow: once
// it stops waiting it is CPU-bound, at the CPU per unit left without the
// sync's. A store whose setting moves the sync to a timer or a background
// thread (redis appendfsync everysec) removes all of it; otherwise group
// commit recovers about half (case L1), the floor of the range.
//
// Measured: redis appendfsync always (corpus) used 0.29 of 2 cores, 46% of
// its samples in fdatasync and its one serving thread 49% of the window
// waiting in it: 62% of the thread's time and 80% of its busy time, 2.6x
// to 5.0x; everysec measured 3.2x [2.4, 4.2]. PostgreSQL committing every
// insert (8 backends): the backends slept 0.6 thread-seconds a second in
// fdatasync and 3.6 on the WAL write lock behind it, of their 7.2.
func waitShare(f *rules.Finding, cpuShare, waiting float64, q *syncQueue, w facts.Work, moveable bool) {
	threads, queued := 1.0, 0.0 // one serving thread, unless perf's thread IDs say
	if q != nil {
		waiting, queued, threads = q.inSync, q.queued, q.threads
	}
	law := rules.NewQueueLaw(cpuShare, waiting+queued, threads, w)
	lowFactor := 1.0
	if !moveable {
		lowFactor = groupCommitGain
	}
	low, high, mid, capped := law.Range(lowFactor)
	cpuBound := ""
	if capped {
		cpuBound = law.CapNote()
	}
	f.Resource, f.Impact, f.ImpactRange = "latency", mid, &[2]float64{low, high}
	whose := "a serving thread"
	if q != nil {
		whose = fmt.Sprintf("its serving threads (%s on average)", human.Number(threads))
	}
	f.ImpactBasis = fmt.Sprintf("the process used %.2f of %s cores, so its threads, not its CPUs, set the rate: the syncs hold %s "+
		"%s of their time on the CPU, waiting for the device and queued behind them, %s of their busy time; moving the sync off the request path removes it "+
		"(the low end, where group commit is the fix, about half)%s", w.Cores, human.Number(w.Available), whose, human.Percent(law.OfWindow), human.Percent(law.OfBusy), cpuBound)
	f.Evidence = append(f.Evidence, rules.Share("the serving threads' time in or behind the syncs (on the CPU, waiting for the device, queued), of all their time", law.OfWindow))
}

// offCPUInSyncs is the off-CPU time perf's scheduler events saw inside a
// sync (thread-seconds), the part in uninterruptible sleep (the device),
// and the recording's window.
func offCPUInSyncs(ev *evidence.Evidence) (waited, device, window time.Duration, ok bool) {
	p := ev.Profiles[evidence.OffCPU]
	if p == nil || p.DurationNanos <= 0 || len(p.SampleType) == 0 {
		return 0, 0, 0, false
	}
	for _, s := range p.Sample {
		if !rules.InStack(s, nativeSync) {
			continue
		}
		d := time.Duration(s.Value[0])
		waited += d
		if slices.Contains(s.Label["state"], "D") {
			device += d
		}
	}
	return waited, device, time.Duration(p.DurationNanos), waited > 0
}

// threadSplit is how a native process's sync time divides between the
// threads that serve connections and those that do not.
type threadSplit struct {
	serving, background float64
	backgroundThreads   []string // their names
}

// splitByThread divides the sync time by thread, from perf's thread IDs
// and the serving threads among them. The sync time is the waits where
// perf's scheduler events saw them, the on-CPU samples otherwise. ok is
// false when the profiles carry no syncs, or which thread serves is not
// known (serving is nil).
func splitByThread(ev *evidence.Evidence, serving map[int64]bool) (split threadSplit, ok bool) {
	if serving == nil {
		return split, false
	}
	for _, p := range rules.PerfProfiles(ev) {
		names := map[string]bool{}
		for _, s := range p.Sample {
			tid := s.NumLabel["tid"]
			if len(tid) == 0 || len(s.Value) == 0 || !rules.InStack(s, nativeSync) {
				continue
			}
			if serving[tid[0]] {
				split.serving += float64(s.Value[0])
				continue
			}
			split.background += float64(s.Value[0])
			if name := s.Label["comm"]; len(name) > 0 {
				names[name[0]] = true
			}
		}
		if split.serving+split.background > 0 {
			split.backgroundThreads = slices.Sorted(maps.Keys(names))
			return split, true
		}
	}
	return split, false
}

// minWakeShare is the part of the futex wake-ups perf sampled that must be
// under the code calling the sync for the serving threads' futex sleeps to
// count as a queue behind the syncs. Measured: PostgreSQL committing every
// insert (pgbench, 8 clients), 82 of the 86 sampled wake-ups were in
// XLogFlush's LWLockRelease, the backend that flushed the WAL waking those
// queued on WALWriteLock; the backends slept 3.6 thread-seconds a second
// on futexes against 0.7 in fdatasync itself, and synchronous_commit = off
// gained 2.1x.
const minWakeShare = 0.5

// syncQueue is what perf's scheduler events show of the serving threads
// around the syncs, in thread-seconds per second of the window: their
// time (on the CPU and off it), their waits inside a sync, and their futex
// sleeps behind it.
type syncQueue struct {
	threads, inSync, queued float64
	wakeShare               float64 // of the futex wake-ups sampled, the share in the syncing code
}

// queueBehindSyncs reads perf's thread IDs for the serving threads' time
// (serving, from rules.ServingThreads; rules.ServingThreadTime) and their sleeps: the waits inside a sync, and the
// futex sleeps (frames.FutexWait) outside one, which are a queue behind
// the syncs when at least minWakeShare of the futex wake-ups perf sampled
// on the CPU (frames.FutexWake) are under the code calling the sync
// (syncing): a native program's group commit, where one thread flushes
// and those committing meanwhile sleep on the flush lock until it wakes
// them. C libraries rarely keep frame pointers, so the sleeper's own stack
// stops at the C library's futex wrapper and cannot show what it waits
// for; the waker's can.
func queueBehindSyncs(ev *evidence.Evidence, serving map[int64]bool, syncing evidence.Matcher) (syncQueue, bool) {
	var q syncQueue
	off, on := ev.Profiles[evidence.OffCPU], ev.Profiles[evidence.Perf]
	threads, ok := rules.ServingThreadTime(on, off, serving)
	if !ok {
		return q, false
	}
	q.threads = threads
	window := float64(off.DurationNanos)
	var wakes, wakesSyncing float64
	for _, s := range on.Sample {
		if len(s.Value) > 0 && rules.InStack(s, frames.FutexWake) {
			v := float64(s.Value[0])
			wakes += v
			if rules.InStack(s, syncing) {
				wakesSyncing += v
			}
		}
	}
	var futex float64
	for _, s := range off.Sample {
		tid := s.NumLabel["tid"]
		if len(tid) == 0 || !serving[tid[0]] || len(s.Value) == 0 {
			continue
		}
		v := float64(s.Value[0]) / window
		switch {
		case rules.InStack(s, nativeSync):
			q.inSync += v
		case rules.InStack(s, frames.FutexWait):
			futex += v
		}
	}
	if wakes > 0 {
		q.wakeShare = wakesSyncing / wakes
	}
	if q.wakeShare >= minWakeShare {
		q.queued = futex
	}
	return q, true
}

// fromSamples is the view without a trace: on-CPU samples inside a sync
// (perf shows the kernel's part). The waits themselves are not seen, so the
// finding is at most medium and says so.
func fromSamples(pass *rules.Pass) error {
	st, prof := facts.Get(pass.Facts, facts.PerfStacks), pass.Evidence.Profile(evidence.Perf)
	if st == nil {
		st, prof = facts.Get(pass.Facts, facts.CPUStacks), pass.Evidence.Profile(evidence.CPU)
	}
	share := st.Share(nativeSync)
	// Counted in samples: a Go CPU profile's total is in nanoseconds.
	syncSamples := share * float64(evidence.SampleCount(prof))
	// A process that mostly waits is on a CPU little: its syncs' waits,
	// when perf's scheduler events saw them, are evidence on their own.
	waited, device, window, offCPU := offCPUInSyncs(pass.Evidence)
	offCPU = offCPU && waited.Seconds()/window.Seconds() >= minInFlight
	if share < minCPUShare && !offCPU {
		return nil
	}
	if syncSamples < minSyncSamples && !offCPU {
		pass.Skip(fmt.Sprintf("too few samples inside fsync/fdatasync (%.0f) to judge; profile longer or under load, or collect an execution trace", syncSamples))
		return nil
	}
	comm := ""
	if s := pass.Evidence.SystemEnd; s != nil && s.Process != nil {
		comm = s.Process.Comm
	}
	app := func(fn string) bool {
		return !nativeSync(fn) && !facts.Get(pass.Facts, facts.SystemFrames)(fn) && fn != "" && fn[0] != '['
	}
	callers := st.TopSites(3, st.CallerOf(nativeSync, app))
	f := rules.Finding{
		Severity:    min(rules.SeverityFor(share), rules.Medium),
		Impact:      share * groupCommitGain,
		Resource:    "cpu",
		ImpactBasis: "on-CPU samples inside fsync/fdatasync; the time waiting for the device is not in a CPU profile, so the latency cost is larger",
		Summary:     fmt.Sprintf("fsync/fdatasync takes %s of on-CPU samples, and more while waiting for the disk", human.Percent(share)),
		Evidence: []rules.Fact{
			rules.Share("samples inside fsync/fdatasync", share),
			rules.Text("not seen", "the time waiting for the device (off-CPU); an execution trace (Go) or perf's sched events show it"),
		},
		Fix:       pass.Rule.Doc.Fix,
		Caveats:   []string{pass.Rule.Doc.Caveats},
		Locations: rules.Locations(callers, "code syncing"),
		Frames:    st.Matched(nativeSync, 8),
	}
	if comm != "" {
		f.Evidence = append(f.Evidence, rules.Text("process", comm))
	}
	source := "on-CPU samples inside fsync/fdatasync (" + st.Type + " profile)"
	if offCPU {
		// perf's scheduler events show the waits themselves.
		inFlight := waited.Seconds() / window.Seconds()
		f.Evidence[1] = rules.Share("threads waiting in fsync/fdatasync, per second of the window (off-CPU, perf sched_switch)", inFlight)
		f.Evidence = append(f.Evidence, rules.Share("of that wait, uninterruptible (the device)", device.Seconds()/waited.Seconds()))
		f.Summary += fmt.Sprintf("; a thread waits in the sync %s of the time", human.Percent(min(inFlight, 1)))
		f.Severity = max(f.Severity, rules.Grade(inFlight, mediumInFlight, highInFlight))
		source += fmt.Sprintf("; the waits from perf's sched_switch events over %s", human.RoundDuration(window))
		if syncSamples < minSyncSamples {
			// Too few on-CPU samples to claim CPU: the cost is the wait.
			f.Resource, f.Impact = "latency", min(inFlight, 1)*groupCommitGain
			f.ImpactBasis = "share of the window a thread waited in fsync/fdatasync (perf sched_switch); group commit served 2.4x the requests on the same disk in case L1, about half of that time back"
			f.Summary = fmt.Sprintf("A thread waits in fsync/fdatasync %s of the time (perf's scheduler events), %s of it for the device",
				human.Percent(min(inFlight, 1)), human.Percent(device.Seconds()/waited.Seconds()))
			f.Evidence = slices.DeleteFunc(f.Evidence, func(fa rules.Fact) bool { return fa.Name == "samples inside fsync/fdatasync" })
			source = fmt.Sprintf("perf's sched_switch events over %s (too few on-CPU samples to weigh)", human.RoundDuration(window))
		}
	}
	serving := rules.ServingThreads(rules.PerfProfiles(pass.Evidence))
	if offCPU && syncSamples >= minSyncSamples {
		if w := facts.Get(pass.Facts, facts.WorkDone); w.WaitBound() {
			var queue *syncQueue
			syncing := func(fn string) bool {
				return slices.ContainsFunc(callers, func(c evidence.Site) bool { return c.Func == fn })
			}
			if q, ok := queueBehindSyncs(pass.Evidence, serving, syncing); ok {
				queue = &q
				if q.queued > 0 {
					f.Summary += fmt.Sprintf("; %s threads on average queue behind it, asleep on a lock %s releases",
						human.Number(q.queued), rules.ShortFunc(callers[0].Func))
					f.Evidence = append(f.Evidence,
						rules.Count("serving threads queued behind the syncs, on average (futex sleeps; perf sched_switch)", q.queued, ""),
						rules.Share("of the futex wake-ups sampled, in the code calling the sync", q.wakeShare))
				}
			}
			waitShare(&f, share, waited.Seconds()/window.Seconds(), queue, w, storeSettings[comm] != "")
		}
	}
	if waiting, at, window, ok := queuedBehindSyncs(pass.Evidence, st); ok {
		// The block profile shows what the CPU view cannot: goroutines
		// queued on a lock in the code that syncs, waiting for the sync.
		f.Evidence[1] = rules.Text("not seen", "the time the sync itself waits for the device (off-CPU); an execution trace (Go) or perf's sched events show it")
		f.Evidence = append(f.Evidence,
			rules.Count("goroutines queued on a lock in the syncing code, on average (block profile)", waiting, ""),
			rules.Text("where they queue", fmt.Sprintf("%s (%s:%d)", rules.ShortFunc(at.Func), filepath.Base(at.File), at.Line)))
		f.Summary += fmt.Sprintf("; %s goroutines on average queue behind it at %s's lock", human.Number(waiting), rules.ShortFunc(at.Func))
		source += fmt.Sprintf("; the queue behind them from the block profile over %s", human.RoundDuration(window))
		if waiting >= minQueued {
			f.Severity = rules.Medium
		}
	}
	f.Evidence = append(f.Evidence, rules.Text("source", source))
	// The work accounting's cores count a server's descendants (a
	// PostgreSQL backend per connection), which the process's own times
	// leave out: the postmaster alone used 0.001 of the 0.58 cores its
	// backends did while committing every insert.
	if w := facts.Get(pass.Facts, facts.WorkDone); w.Cores > 0 {
		f.Evidence = append(f.Evidence, rules.Count(fmt.Sprintf("CPUs the process used, the rest of its time waiting (%s)", w.CoresSource), w.Cores, ""))
	}
	if split, ok := splitByThread(pass.Evidence, serving); ok && split.background > split.serving {
		// The threads serving connections do not sync: a background thread
		// does, for every write since its last sync (redis's appendfsync
		// everysec, a database's WAL writer). Already batched.
		threads := strings.Join(split.backgroundThreads, ", ")
		f.Severity, f.Impact, f.Resource, f.ImpactBasis, f.ImpactRange = rules.Info, 0, "latency", backgroundBasis, nil
		f.Summary = fmt.Sprintf("Writes wait for a background fsync: %s syncs, not the threads serving connections; that is the floor of a durable write's latency", threads)
		f.Fix, f.Caveats = backgroundFix, nil
		f.Evidence = append(f.Evidence,
			rules.Share("sync time on threads serving connections (perf's thread IDs)", split.serving/(split.serving+split.background)),
			rules.Text("threads syncing", threads))
	} else if advice, ok := storeSettings[comm]; ok {
		f.Fix = advice + " " + f.Fix
	}
	// The sync's kernel time is the sync's, not the network stack's.
	f.Claim = &rules.Claim{Level: rules.LevelCode, CPU: facts.Get(pass.Facts, facts.CPUStacks).Has(nativeSync)}
	pass.Report(f)
	return nil
}
