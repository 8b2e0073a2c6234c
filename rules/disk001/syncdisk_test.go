package disk001

import (
	"strings"
	"testing"

	"github.com/google/pprof/profile"

	"github.com/perfdoctor/perfdoctor/bundle"
	"github.com/perfdoctor/perfdoctor/evidence"
	"github.com/perfdoctor/perfdoctor/internal/testprof"
	"github.com/perfdoctor/perfdoctor/rules"
)

// The testdata bundles are casebook L1 under `perfdoctor load -c 8`,
// collected with `perfdoctor collect` (its 1 s execution trace and the CPU
// profile) on an ext4 virtual disk: bad fdatasyncs in each handler, fixed
// group-commits.
func diagnose(t *testing.T, dir string) rules.Result {
	t.Helper()
	ev, err := evidence.Load("testdata/" + dir)
	if err != nil {
		t.Fatal(err)
	}
	return rules.Run(ev, []*rules.Rule{Rule})
}

func TestFsyncPerRequest(t *testing.T) {
	res := diagnose(t, "l1-bad")
	if len(res.Findings) != 1 {
		t.Fatalf("want one finding: %+v", res)
	}
	f := res.Findings[0]
	if f.Severity != rules.High || f.Resource != "latency" || !strings.Contains(f.Summary, "Each request waits for its own fsync") ||
		!strings.Contains(f.Summary, "appendSync") || !strings.Contains(f.Fix, "Group commit") {
		t.Errorf("%s %s %q", f.Severity, f.Resource, f.Summary)
	}
	if len(f.Locations) != 1 || !strings.HasSuffix(f.Locations[0].File, "l1fsync.go") {
		t.Errorf("the syncing code is not located: %+v", f.Locations)
	}
}

func TestGroupCommitIsOnlyInformation(t *testing.T) {
	res := diagnose(t, "l1-fixed")
	if len(res.Findings) != 1 {
		t.Fatalf("want the informational finding: %+v", res)
	}
	if f := res.Findings[0]; f.Severity != rules.Info || !strings.Contains(f.Summary, "background fsync") || !strings.Contains(f.Summary, "commit") {
		t.Errorf("%s %q", f.Severity, f.Summary)
	}
}

func TestSilentWithoutSyncs(t *testing.T) {
	cpu := testprof.Build(testprof.Stack{Value: 1000, Funcs: []string{"main.work", "main.main"}})
	ev := testprof.Evidence(map[evidence.Kind]*profile.Profile{evidence.CPU: cpu})
	if res := rules.Run(ev, []*rules.Rule{Rule}); len(res.Findings) != 0 {
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
	res := rules.Run(ev, []*rules.Rule{Rule})
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
	res := rules.Run(ev, []*rules.Rule{Rule})
	if len(res.Findings) != 1 {
		t.Fatalf("want one finding: %+v", res)
	}
	if f := res.Findings[0]; !strings.Contains(f.Fix, "synchronous_commit = off") || !strings.Contains(f.Fix, "commit_delay") ||
		len(f.Locations) == 0 || f.Locations[0].Function != "issue_xlog_fsync" {
		t.Errorf("postgres: fix %q locations %+v", f.Fix, f.Locations)
	}
}
