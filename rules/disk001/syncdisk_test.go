package disk001

import (
	"math"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/perfdoctor/perfdoctor/facts"
	"github.com/perfdoctor/perfdoctor/rules/ruletest"

	"github.com/google/pprof/profile"

	"github.com/perfdoctor/perfdoctor/bundle"
	"github.com/perfdoctor/perfdoctor/evidence"
	"github.com/perfdoctor/perfdoctor/formats/perfscript"
	"github.com/perfdoctor/perfdoctor/internal/testprof"
	"github.com/perfdoctor/perfdoctor/rules"
)

// The recorded bundles in testdata (casebook L1 bad and fixed, redis
// with appendfsync always and everysec) say what they must show in their
// want.txt; the syncing code of L1 bad is located too.
func TestRecorded(t *testing.T) {
	res := ruletest.Run(t, "testdata", []*rules.Rule{Rule})
	if fs := res["l1-bad"].Findings; len(fs) == 1 && (len(fs[0].Locations) != 1 || !strings.HasSuffix(fs[0].Locations[0].File, "l1fsync.go")) {
		t.Errorf("l1-bad: the syncing code is not located: %+v", fs[0].Locations)
	}
}

func TestSilentWithoutSyncs(t *testing.T) {
	cpu := testprof.Build(testprof.Stack{Value: 1000, Funcs: []string{"main.work", "main.main"}})
	ev := testprof.Evidence(map[evidence.Kind]*profile.Profile{evidence.CPU: cpu})
	if res := rules.Run(facts.New(ev), []*rules.Rule{Rule}); len(res.Findings) != 0 {
		t.Fatalf("no syncs, yet: %+v", res.Findings[0])
	}
}

// Without a trace (a native process through perf), on-CPU samples inside
// fdatasync are the evidence, at most medium, with redis's own setting
// named for redis.
func TestOnCPUSyncsFromPerf(t *testing.T) {
	cpu := testprof.Build(
		testprof.Stack{Value: 200, Funcs: []string{"ext4_sync_file", "__x64_sys_fdatasync", "fdatasync", "flushAppendOnlyFile", "beforeSleep", "main"}},
		testprof.Stack{Value: 800, Funcs: []string{"processCommand", "main"}},
	)
	ev := testprof.Evidence(map[evidence.Kind]*profile.Profile{evidence.CPU: cpu})
	ev.SystemEnd = &bundle.SystemSnapshot{Process: &bundle.ProcessInfo{Comm: "redis-server"}}
	res := rules.Run(facts.New(ev), []*rules.Rule{Rule})
	if len(res.Findings) != 1 {
		t.Fatalf("want a finding: %+v", res)
	}
	f := res.Findings[0]
	if f.Severity != rules.Medium || !strings.Contains(f.Fix, "appendfsync everysec") || len(f.Locations) == 0 || f.Locations[0].Function != "flushAppendOnlyFile" {
		t.Errorf("%s %q %+v", f.Severity, f.Fix, f.Locations)
	}
}

// A PostgreSQL backend under pgbench (perf -p on it): the WAL flush at
// every commit, with PostgreSQL's own settings as the levers.
func TestPostgresCommitFlushNamesItsSettings(t *testing.T) {
	perf := testprof.Build(
		testprof.Stack{Value: 110, Funcs: []string{"ext4_sync_file", "do_fsync", "__x64_sys_fdatasync", "fdatasync", "issue_xlog_fsync", "XLogFlush", "RecordTransactionCommit"}},
		testprof.Stack{Value: 420, Funcs: []string{"ExecScan", "standard_ExecutorRun", "PortalRun", "exec_simple_query", "PostgresMain"}},
	)
	ev := testprof.Evidence(map[evidence.Kind]*profile.Profile{evidence.CPU: perf})
	ev.SystemEnd = &bundle.SystemSnapshot{Process: &bundle.ProcessInfo{Comm: "postgres"}}
	res := rules.Run(facts.New(ev), []*rules.Rule{Rule})
	if len(res.Findings) != 1 {
		t.Fatalf("want one finding: %+v", res)
	}
	if f := res.Findings[0]; !strings.Contains(f.Fix, "synchronous_commit = off") || !strings.Contains(f.Fix, "commit_delay") ||
		len(f.Locations) == 0 || f.Locations[0].Function != "issue_xlog_fsync" {
		t.Errorf("postgres: fix %q locations %+v", f.Fix, f.Locations)
	}
}

// A server whose work runs in its children (PostgreSQL's backends): the
// CPUs it used are the tree's, not the postmaster's own 0.001.
func TestCPUsUsedCountTheDescendants(t *testing.T) {
	perf := testprof.Build(
		testprof.Stack{Value: 110, Funcs: []string{"ext4_sync_file", "do_fsync", "__x64_sys_fdatasync", "fdatasync", "issue_xlog_fsync", "XLogFlush", "RecordTransactionCommit"}},
		testprof.Stack{Value: 420, Funcs: []string{"ExecScan", "standard_ExecutorRun", "PortalRun", "exec_simple_query", "PostgresMain"}},
	)
	ev := testprof.Evidence(map[evidence.Kind]*profile.Profile{evidence.CPU: perf})
	at := time.Date(2026, 11, 28, 3, 0, 0, 0, time.UTC)
	snapshot := func(after time.Duration, postmaster, backend float64) *bundle.SystemSnapshot {
		return &bundle.SystemSnapshot{Time: at.Add(after),
			Process:  &bundle.ProcessInfo{PID: 10, Comm: "postgres", StartTime: 1, UserCPUSeconds: postmaster},
			Children: []bundle.ProcessInfo{{PID: 11, Comm: "postgres", StartTime: 2, UserCPUSeconds: backend}}}
	}
	// 10 s: 0.01 s of CPU for the postmaster, 5.8 s for its backend.
	ev.SystemStart, ev.SystemEnd = snapshot(0, 0, 1), snapshot(10*time.Second, 0.01, 6.8)
	res := rules.Run(facts.New(ev), []*rules.Rule{Rule})
	if len(res.Findings) != 1 {
		t.Fatalf("want one finding: %+v", res)
	}
	for _, fact := range res.Findings[0].Evidence {
		if strings.HasPrefix(fact.Name, "CPUs the process used") {
			if fact.Num < 0.58 || fact.Num > 0.582 || !strings.Contains(fact.Name, "descendants") {
				t.Errorf("%s: %v, want 0.581 with its descendants", fact.Name, fact.Num)
			}
			return
		}
	}
	t.Errorf("no CPUs used in %+v", res.Findings[0].Evidence)
}

// blockProfile is a block profile over 5 s with one stack that blocked for
// delay in total.
func blockProfile(delay time.Duration, funcs ...string) *profile.Profile {
	p := &profile.Profile{
		SampleType:    []*profile.ValueType{{Type: "contentions", Unit: "count"}, {Type: "delay", Unit: "nanoseconds"}},
		DurationNanos: (5 * time.Second).Nanoseconds(),
	}
	var locs []*profile.Location
	for i, fn := range funcs {
		f := &profile.Function{ID: uint64(i + 1), Name: fn, Filename: "/src/wal/log.go"}
		p.Function = append(p.Function, f)
		l := &profile.Location{ID: uint64(i + 1), Line: []profile.Line{{Function: f, Line: int64(40 + i)}}}
		p.Location = append(p.Location, l)
		locs = append(locs, l)
	}
	p.Sample = []*profile.Sample{{Location: locs, Value: []int64{1000, delay.Nanoseconds()}}}
	return p
}

// syncingService is a Go service whose CPU profile shows fdatasync under
// its log's append, 6% of samples: without a trace, a low on-CPU view.
func syncingService() *evidence.Evidence {
	cpu := testprof.Build(
		testprof.Stack{Value: 60, Funcs: []string{"syscall.Fdatasync", "os.(*File).Sync", "example.com/wal.(*Log).Append", "example.com/wal.(*Server).ServeHTTP", "net/http.serverHandler.ServeHTTP"}},
		testprof.Stack{Value: 940, Funcs: []string{"example.com/wal.(*Server).ServeHTTP", "net/http.serverHandler.ServeHTTP"}},
	)
	return testprof.Evidence(map[evidence.Kind]*profile.Profile{evidence.CPU: cpu})
}

// The block profile shows requests queued on the log's lock behind the
// syncs: the second source raises the no-trace view to medium and says so.
func TestQueueBehindSyncsFromTheBlockProfile(t *testing.T) {
	ev := syncingService()
	base := rules.Run(facts.New(ev), []*rules.Rule{Rule})
	if len(base.Findings) != 1 || base.Findings[0].Severity != rules.Low {
		t.Fatalf("on-CPU view alone: %+v", base)
	}
	ev.Profiles[evidence.Block] = blockProfile(15*time.Second, "sync.runtime_SemacquireMutex", "sync.(*Mutex).Lock", "example.com/wal.(*Log).Append", "example.com/wal.(*Server).ServeHTTP", "net/http.serverHandler.ServeHTTP")
	res := rules.Run(facts.New(ev), []*rules.Rule{Rule})
	if len(res.Findings) != 1 {
		t.Fatalf("%+v", res)
	}
	f := res.Findings[0]
	var source string
	for _, fa := range f.Evidence {
		if fa.Name == "source" {
			source = fa.Value
		}
	}
	if f.Severity != rules.Medium || !strings.Contains(f.Summary, "3 goroutines on average queue behind it at wal.(*Log).Append's lock") ||
		!strings.Contains(source, "block profile over 5s") {
		t.Errorf("%s %q source %q", f.Severity, f.Summary, source)
	}
}

// Lock waits elsewhere are not a queue behind the syncs.
func TestUnrelatedLockWaitsAreNotTheSyncs(t *testing.T) {
	ev := syncingService()
	ev.Profiles[evidence.Block] = blockProfile(15*time.Second, "sync.runtime_SemacquireMutex", "sync.(*Mutex).Lock", "example.com/wal.(*Cache).Get", "net/http.serverHandler.ServeHTTP")
	res := rules.Run(facts.New(ev), []*rules.Rule{Rule})
	if len(res.Findings) != 1 || res.Findings[0].Severity != rules.Low || strings.Contains(res.Findings[0].Summary, "queue") {
		t.Errorf("%+v", res.Findings)
	}
}

// offCPU is the off-CPU profile of a C program that sleeps 5 ms and
// fdatasyncs in a loop, recorded with perf's sched_switch events.
func offCPU(t *testing.T) *profile.Profile {
	f, err := os.Open("../../formats/perfscript/testdata/sched_switch.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p, err := perfscript.ParseOffCPU(f, 18439)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// perf's scheduler events show the waits in the syncs that on-CPU samples
// miss: the finding grades them and names the source.
func TestSyncWaitsFromPerfSchedEvents(t *testing.T) {
	cpu := testprof.Build(
		testprof.Stack{Value: 200, Funcs: []string{"ext4_sync_file", "__x64_sys_fdatasync", "fdatasync", "main"}},
		testprof.Stack{Value: 800, Funcs: []string{"main"}},
	)
	ev := testprof.Evidence(map[evidence.Kind]*profile.Profile{evidence.CPU: cpu, evidence.OffCPU: offCPU(t)})
	res := rules.Run(facts.New(ev), []*rules.Rule{Rule})
	if len(res.Findings) != 1 {
		t.Fatalf("%+v", res)
	}
	f := res.Findings[0]
	var waits, source string
	for _, fa := range f.Evidence {
		switch fa.Name {
		case "threads waiting in fsync/fdatasync, per second of the window (off-CPU, perf sched_switch)":
			waits = fa.Value
		case "source":
			source = fa.Value
		}
	}
	if waits == "" || !strings.Contains(f.Summary, "a thread waits in the sync") || !strings.Contains(source, "perf's sched_switch events") {
		t.Errorf("%s %q %+v", f.Severity, f.Summary, f.Evidence)
	}
}

// A process that waits in its syncs is on a CPU little: with one perf
// sample inside fdatasync, the scheduler events alone make it a latency
// finding.
func TestWaitingProcessFromPerfSchedEventsAlone(t *testing.T) {
	stacks := testprof.Build(testprof.Stack{Value: 1, Funcs: []string{"ext4_sync_file", "__x64_sys_fdatasync", "fdatasync", "main"}})
	ev := testprof.Evidence(map[evidence.Kind]*profile.Profile{evidence.CPU: stacks, evidence.Perf: stacks, evidence.OffCPU: offCPU(t)})
	res := rules.Run(facts.New(ev), []*rules.Rule{Rule})
	if len(res.Findings) != 1 {
		t.Fatalf("%+v", res)
	}
	if f := res.Findings[0]; f.Resource != "latency" || f.Severity < rules.Medium || !strings.HasPrefix(f.Summary, "A thread waits in fsync/fdatasync") {
		t.Errorf("%s %s %q", f.Resource, f.Severity, f.Summary)
	}
	delete(ev.Profiles, evidence.OffCPU)
	if res := rules.Run(facts.New(ev), []*rules.Rule{Rule}); len(res.Findings) != 0 {
		t.Errorf("one on-CPU sample alone: %+v", res.Findings)
	}
}

// Off-CPU time elsewhere (sleeps) is not sync time.
func TestOffCPUOutsideSyncsIsNotSyncTime(t *testing.T) {
	p := offCPU(t)
	var kept []*profile.Sample
	for _, s := range p.Sample {
		sync := false
		for _, l := range s.Location {
			if strings.Contains(l.Line[0].Function.Name, "fdatasync") {
				sync = true
			}
		}
		if !sync {
			kept = append(kept, s)
		}
	}
	p.Sample = kept
	cpu := testprof.Build(
		testprof.Stack{Value: 200, Funcs: []string{"ext4_sync_file", "__x64_sys_fdatasync", "fdatasync", "main"}},
		testprof.Stack{Value: 800, Funcs: []string{"main"}},
	)
	ev := testprof.Evidence(map[evidence.Kind]*profile.Profile{evidence.CPU: cpu, evidence.OffCPU: p})
	res := rules.Run(facts.New(ev), []*rules.Rule{Rule})
	if len(res.Findings) != 1 || strings.Contains(res.Findings[0].Summary, "waits in the sync") {
		t.Errorf("%+v", res.Findings)
	}
}

// Samples are counted as samples: a Go CPU profile's values are also in
// nanoseconds, and 6 samples inside fdatasync are too few to judge.
func TestFewSyncSamplesInAGoProfileAreNotJudged(t *testing.T) {
	cpu := testprof.Build(
		testprof.Stack{Value: 6, Funcs: []string{"syscall.fdatasync", "os.(*File).Sync", "main.(*wal).append"}},
		testprof.Stack{Value: 94, Funcs: []string{"main.handle"}},
	)
	res := rules.Run(facts.New(testprof.Evidence(map[evidence.Kind]*profile.Profile{evidence.CPU: cpu})), []*rules.Rule{Rule})
	if len(res.Findings) != 0 || len(res.NotChecked) != 1 || !strings.Contains(res.NotChecked[0].Reason, "too few samples inside") {
		t.Errorf("6 sync samples judged: %+v", res)
	}
}

// On-CPU samples alone speak from 3%: a sync's CPU is a sliver of its wall
// time (etcd's WAL fdatasync, which sets its put latency, read 4-7%).
func TestOnCPUSyncShareFloor(t *testing.T) {
	for _, tc := range []struct {
		inSync int64
		want   int
	}{{40, 1}, {20, 0}} {
		cpu := testprof.Build(
			testprof.Stack{Value: tc.inSync, Funcs: []string{"syscall.fdatasync", "os.(*File).Sync", "example.com/wal.(*WAL).sync", "example.com/raft.(*node).run"}},
			testprof.Stack{Value: 1000 - tc.inSync, Funcs: []string{"example.com/gateway.(*Server).ServeHTTP", "net/http.serverHandler.ServeHTTP"}},
		)
		res := rules.Run(facts.New(testprof.Evidence(map[evidence.Kind]*profile.Profile{evidence.CPU: cpu})), []*rules.Rule{Rule})
		if len(res.Findings) != tc.want {
			t.Errorf("%d of 1000 samples in fdatasync: %d findings, want %d", tc.inSync, len(res.Findings), tc.want)
		}
		if tc.want == 1 && res.Findings[0].Severity != rules.Low {
			t.Errorf("%d of 1000 samples in fdatasync: %s", tc.inSync, res.Findings[0].Severity)
		}
	}
}

// committing is a database whose four backends each commit with their own
// WAL flush (XLogFlush -> fdatasync) over 10 s: each is on the CPU 1 s,
// in fdatasync 2 s, asleep on a futex 4 s and waiting for its client
// (recv) 3 s. wakers is where the futex wake-ups perf sampled are.
func committing(wakers ...string) *evidence.Evidence {
	var on, off []testprof.Stack
	for tid := int64(1); tid <= 4; tid++ {
		on = append(on,
			testprof.Stack{TID: tid, Value: 30, Funcs: []string{"ExecInsert", "PortalRun", "PostgresMain"}},
			testprof.Stack{TID: tid, Value: 40, Funcs: []string{"ext4_sync_file", "__x64_sys_fdatasync", "fdatasync", "XLogFlush", "CommitTransactionCommand", "PostgresMain"}},
			testprof.Stack{TID: tid, Value: 10, Funcs: []string{"tcp_recvmsg", "__x64_sys_recvfrom", "recv", "pq_getbyte", "PostgresMain"}},
			testprof.Stack{TID: tid, Value: 20, Funcs: append([]string{"futex_wake", "do_futex", "__x64_sys_futex", "sem_post"}, wakers...)},
		)
		off = append(off,
			testprof.Stack{TID: tid, Value: 2e9, Funcs: []string{"__schedule", "io_schedule", "ext4_sync_file", "__x64_sys_fdatasync", "fdatasync", "XLogFlush", "CommitTransactionCommand", "PostgresMain"}},
			testprof.Stack{TID: tid, Value: 4e9, Funcs: []string{"__schedule", "futex_wait", "do_futex", "__x64_sys_futex", "__futex_abstimed_wait_common"}},
			testprof.Stack{TID: tid, Value: 3e9, Funcs: []string{"__schedule", "schedule_hrtimeout_range", "do_epoll_wait", "__x64_sys_epoll_wait", "epoll_wait", "secure_read", "pq_getbyte", "PostgresMain"}},
		)
	}
	perf, offCPU := testprof.Build(on...), testprof.BuildOffCPU(off...)
	ev := testprof.Evidence(map[evidence.Kind]*profile.Profile{evidence.CPU: perf, evidence.Perf: perf, evidence.OffCPU: offCPU})
	at := time.Date(2026, 11, 28, 5, 0, 0, 0, time.UTC)
	// 4 s of CPU over the 10 s: 0.4 of 2 cores.
	ev.SystemStart = &bundle.SystemSnapshot{Time: at, Machine: bundle.MachineInfo{NumCPU: 2}, Process: &bundle.ProcessInfo{PID: 1, Comm: "postgres", StartTime: 1}}
	ev.SystemEnd = &bundle.SystemSnapshot{Time: at.Add(10 * time.Second), Machine: bundle.MachineInfo{NumCPU: 2}, Process: &bundle.ProcessInfo{PID: 1, Comm: "postgres", StartTime: 1, UserCPUSeconds: 4}}
	return ev
}

// Backends asleep on a lock the flushing backend releases (PostgreSQL's
// WAL write lock, released in XLogFlush) queue behind the syncs: their
// sleeps count with the syncs' own waits, of the backends' whole time.
func TestQueueBehindSyncsFromFutexWakeups(t *testing.T) {
	res := rules.Run(facts.New(committing("LWLockRelease", "XLogFlush", "CommitTransactionCommand", "PostgresMain")), []*rules.Rule{Rule})
	if len(res.Findings) != 1 {
		t.Fatalf("%+v", res)
	}
	f := res.Findings[0]
	if !strings.Contains(f.Summary, "1.6 threads on average queue behind it, asleep on a lock XLogFlush releases") {
		t.Errorf("summary %q", f.Summary)
	}
	// In the sync or behind it: (0.4 x 0.4 cores on the CPU in the sync
	// + 0.8 waiting + 1.6 queued) of the 4 backends' 4 thread-seconds a
	// second is 64%; of their busy time (0.4 + 0.8 + 1.6) 91%, capped at
	// 1 - 0.4 x 0.6 / 2 = 88%, where the process would use both cores.
	if f.ImpactRange == nil || math.Abs(f.ImpactRange[0]-0.64) > 0.01 || math.Abs(f.ImpactRange[1]-0.88) > 0.01 {
		t.Errorf("range %v, want [0.64, 0.88]: %s", f.ImpactRange, f.ImpactBasis)
	}
}

// Futex sleeps that other code ends (a lock elsewhere in the backend) are
// not a queue behind the syncs: the range counts the syncs' own waits.
func TestFutexSleepsOthersEndAreNotAQueueBehindSyncs(t *testing.T) {
	res := rules.Run(facts.New(committing("LWLockRelease", "LockBuffer", "ExecInsert", "PortalRun", "PostgresMain")), []*rules.Rule{Rule})
	if len(res.Findings) != 1 {
		t.Fatalf("%+v", res)
	}
	f := res.Findings[0]
	if strings.Contains(f.Summary, "queue behind") {
		t.Errorf("summary %q", f.Summary)
	}
	// (0.16 + 0.8) of 4 thread-seconds is 24%; of the busy 1.2, 80%.
	if f.ImpactRange == nil || math.Abs(f.ImpactRange[0]-0.24) > 0.01 || math.Abs(f.ImpactRange[1]-0.80) > 0.01 {
		t.Errorf("range %v, want [0.24, 0.80]: %s", f.ImpactRange, f.ImpactBasis)
	}
}
