package disk002

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/google/pprof/profile"

	"github.com/perfdoctor/perfdoctor/bundle"
	"github.com/perfdoctor/perfdoctor/evidence"
	"github.com/perfdoctor/perfdoctor/facts"
	"github.com/perfdoctor/perfdoctor/internal/testprof"
	"github.com/perfdoctor/perfdoctor/rules"
	"github.com/perfdoctor/perfdoctor/rules/ruletest"
)

// MariaDB with a 6 MiB buffer pool under a 345 MB table (the corpus): the
// connection threads wait in pread's direct I/O 38% of their time, and
// the finding names the buffer pool's setting, its value from the option
// file, and the reads per select.
func TestNativeReadWaitsMariaDBBufferPool(t *testing.T) {
	res := ruletest.Expect(t, "../../corpus/native-mariadb-buffer-pool-tiny/bad", []*rules.Rule{Rule},
		`top DISK002 medium "innodb_buffer_pool_size" "reads per select" "index_read_idx_map"`)
	if len(res.Findings) != 1 {
		t.Fatalf("%+v", res.Findings)
	}
	// The reads' share of the serving threads' time, 43%, to the cap
	// where mariadbd would use both cores, 55%.
	if r := res.Findings[0].ImpactRange; r == nil || math.Abs(r[0]-0.43) > 0.01 || math.Abs(r[1]-0.55) > 0.01 {
		t.Errorf("range %v, want [0.43, 0.55]: %s", r, res.Findings[0].ImpactBasis)
	}
	// The bundle holds the option file: the setting's value is stated.
	if f := res.Findings[0]; !strings.Contains(f.Summary, "(innodb_buffer_pool_size=6M in /tmp/perfdoctor-corpus/native-mariadb-buffer-pool-tiny/bad/my.cnf)") ||
		!strings.HasPrefix(f.Fix, "innodb_buffer_pool_size is 6M now") {
		t.Errorf("summary %q, fix %q", f.Summary, f.Fix)
	}
}

// The healthy native servers' threads never wait for a file read, nor do
// those of the syncing ones (their waits are fdatasync's and direct-I/O
// writes').
func TestNativeHealthyAndSyncingAreSilent(t *testing.T) {
	for _, dir := range []string{
		"../../corpus/native-postgresql-select-healthy/bad",
		"../../corpus/native-nginx-static-healthy/bad",
		"../../corpus/native-redis-pipelined-healthy/bad",
		"../../corpus/native-mariadb-flush-per-commit/bad",
		"../../corpus/native-postgresql-commit-per-insert/bad",
	} {
		ruletest.Expect(t, dir, []*rules.Rule{Rule}, "never DISK002")
	}
}

// serving is a server whose four connection threads each spend, over
// 10 s, 1 s on the CPU, 3 s waiting for their clients (epoll) and 6 s in
// wait: 0.4 of 2 cores.
func serving(comm string, wait []string) *evidence.Evidence {
	var on, off []testprof.Stack
	for tid := int64(1); tid <= 4; tid++ {
		on = append(on,
			testprof.Stack{TID: tid, Value: 60, Funcs: []string{"ExecScan", "PortalRun", "PostgresMain"}},
			testprof.Stack{TID: tid, Value: 40, Funcs: []string{"tcp_recvmsg", "__x64_sys_recvfrom", "recv", "pq_getbyte", "PostgresMain"}},
		)
		off = append(off,
			testprof.Stack{TID: tid, Value: 6e9, Funcs: wait},
			testprof.Stack{TID: tid, Value: 3e9, Funcs: []string{"__schedule", "schedule_hrtimeout_range", "do_epoll_wait", "__x64_sys_epoll_wait", "epoll_wait", "secure_read", "pq_getbyte", "PostgresMain"}},
		)
	}
	perf := testprof.Build(on...)
	ev := testprof.Evidence(map[evidence.Kind]*profile.Profile{evidence.CPU: perf, evidence.Perf: perf, evidence.OffCPU: testprof.BuildOffCPU(off...)})
	at := time.Date(2026, 11, 28, 5, 0, 0, 0, time.UTC)
	ev.SystemStart = &bundle.SystemSnapshot{Time: at, Machine: bundle.MachineInfo{NumCPU: 2}, Process: &bundle.ProcessInfo{PID: 1, Comm: comm, StartTime: 1}}
	ev.SystemEnd = &bundle.SystemSnapshot{Time: at.Add(10 * time.Second), Machine: bundle.MachineInfo{NumCPU: 2}, Process: &bundle.ProcessInfo{PID: 1, Comm: comm, StartTime: 1, UserCPUSeconds: 4}}
	return ev
}

// A buffered read that misses the page cache: the backend waits for the
// page to be filled from the disk.
var bufferedRead = []string{"__schedule", "io_schedule", "folio_wait_bit_common", "filemap_get_pages", "filemap_read",
	"ext4_file_read_iter", "vfs_read", "__x64_sys_pread64", "__libc_pread", "FileRead", "mdread", "ReadBuffer_common", "PostgresMain"}

// PostgreSQL's backends waiting for their reads: the finding names
// shared_buffers and says effective_cache_size caches nothing.
func TestNativeReadWaitsPostgreSQL(t *testing.T) {
	res := rules.Run(facts.New(serving("postgres", bufferedRead)), []*rules.Rule{Rule})
	if len(res.Findings) != 1 {
		t.Fatalf("%+v", res)
	}
	f := res.Findings[0]
	if f.Severity != rules.High || f.Resource != "latency" || !strings.Contains(f.Fix, "shared_buffers") ||
		!strings.Contains(f.Fix, "effective_cache_size only") || len(f.Locations) == 0 || f.Locations[0].Function != "FileRead" {
		t.Errorf("%s %s %q %q %+v", f.Severity, f.Resource, f.Summary, f.Fix, f.Locations)
	}
	// 2.4 of the 4 threads' 4 thread-seconds a second wait: 60%; of their
	// busy time (0.4 cores + 2.4) 86%, capped at 1 - 0.4 / 2 = 80% (the
	// reads' own CPU none here), where the process would use both cores.
	if r := f.ImpactRange; r == nil || math.Abs(r[0]-0.60) > 0.01 || math.Abs(r[1]-0.80) > 0.01 {
		t.Errorf("range %v, want [0.60, 0.80]: %s", r, f.ImpactBasis)
	}
}

// Waits for the device that are not reads (fsync, DISK001's) and sleeps
// in network reads are not read waits: the rule stays silent.
func TestNativeSyncAndNetworkWaitsAreNotReads(t *testing.T) {
	for name, wait := range map[string][]string{
		"fsync": {"__schedule", "io_schedule", "folio_wait_bit", "generic_buffers_fsync_noflush", "ext4_sync_file", "do_fsync",
			"__x64_sys_fdatasync", "fdatasync", "issue_xlog_fsync", "XLogFlush", "PostgresMain"},
		"network": {"__schedule", "schedule_timeout", "wait_woken", "tcp_recvmsg", "sock_recvmsg", "sock_read_iter", "vfs_read",
			"ksys_read", "read", "secure_read", "pq_getbyte", "PostgresMain"},
		"futex": {"__schedule", "futex_wait", "do_futex", "__x64_sys_futex", "__futex_abstimed_wait_common", "LWLockAcquire", "PostgresMain"},
	} {
		if res := rules.Run(facts.New(serving("postgres", wait)), []*rules.Rule{Rule}); len(res.Findings) != 0 {
			t.Errorf("%s waits reported as reads: %q", name, res.Findings[0].Summary)
		}
	}
}
