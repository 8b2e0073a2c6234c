package db001

import (
	"strings"
	"testing"

	"github.com/google/pprof/profile"

	"github.com/perfdoctor/perfdoctor/evidence"
	"github.com/perfdoctor/perfdoctor/facts"
	"github.com/perfdoctor/perfdoctor/internal/testprof"
	"github.com/perfdoctor/perfdoctor/rules"
	"github.com/perfdoctor/perfdoctor/rules/ruletest"
)

// H2 looking users up by an unindexed email (corpus jvm-h2-missing-index)
// is told to index it; the same server with the index
// (testdata/h2-indexed) and the healthy corpus servers are not.
func TestH2(t *testing.T) {
	ruletest.Run(t, "testdata", []*rules.Rule{Rule})
	for dir, want := range map[string]string{
		"../../corpus/jvm-h2-missing-index/bad":        `top DB001 high "H2 scans whole tables" "create an index"`,
		"../../corpus/jvm-tomcat-jsp-healthy/bad":      `never DB001`,
		"../../corpus/jvm-zookeeper-reads-healthy/bad": `never DB001`,
	} {
		ruletest.Expect(t, dir, []*rules.Rule{Rule}, want)
	}
	// An index replaces the walk: what the walk dragged goes with it.
	_, res := ruletest.Diagnose(t, "../../corpus/jvm-h2-missing-index/bad", []*rules.Rule{Rule})
	if len(res.Findings) != 1 || !res.Findings[0].RemovesWork {
		t.Errorf("an index removes the walk, yet the range has a top: %+v", res.Findings)
	}
}

// Native engines through perf: PostgreSQL's sequential scan under its
// executor, with its per-row qual, from 10% of CPU; an index scan is not
// a table walk.
func TestPostgresFrames(t *testing.T) {
	run := func(stacks ...testprof.Stack) rules.Result {
		cpu := testprof.Build(stacks...)
		return rules.Run(facts.New(testprof.Evidence(map[evidence.Kind]*profile.Profile{evidence.CPU: cpu})), []*rules.Rule{Rule})
	}
	exec := []string{"ExecScan", "ExecProcNode", "standard_ExecutorRun", "ExecutorRun", "PortalRun", "exec_simple_query", "PostgresMain"}
	seq := append([]string{"heapgettup_pagemode", "heap_getnextslot", "SeqNext"}, exec...)
	qual := append([]string{"ExecInterpExpr", "ExecQual"}, exec...)
	idx := append([]string{"_bt_search", "btgettuple", "index_getnext_tid", "IndexNext"}, exec...)
	res := run(
		testprof.Stack{Value: 400, Funcs: seq},
		testprof.Stack{Value: 200, Funcs: qual},
		testprof.Stack{Value: 400, Funcs: []string{"secure_read", "pq_recvbuf", "PostgresMain"}},
	)
	if len(res.Findings) != 1 || !strings.Contains(res.Findings[0].Summary, "PostgreSQL") || !strings.Contains(res.Findings[0].Summary, "60% of CPU") {
		t.Fatalf("want a PostgreSQL scan at 60%%: %+v", res.Findings)
	}
	if r := res.Findings[0].ImpactRange; r == nil || r[0] != 0.6 {
		t.Errorf("impact range %v, want it to start at the walk and its tests, 0.6", r)
	}
	// Under the threshold: 9% in the walk.
	if res := run(testprof.Stack{Value: 90, Funcs: seq}, testprof.Stack{Value: 910, Funcs: idx}); len(res.Findings) != 0 {
		t.Errorf("a 9%% walk reported: %+v", res.Findings[0])
	}
	// Index scans, however hot, are not table walks.
	if res := run(testprof.Stack{Value: 900, Funcs: idx}, testprof.Stack{Value: 100, Funcs: qual}); len(res.Findings) != 0 {
		t.Errorf("index scans reported: %+v", res.Findings[0])
	}
}

// MariaDB 10.11 tests each row's WHERE through Item_func_eq::val_bool
// under sub_select; with its caller unnamed ([unknown] in Debian's binary)
// the test counts with the walk only under the query's execution.
func TestMariaDBRowTests(t *testing.T) {
	run := func(stacks ...testprof.Stack) rules.Result {
		cpu := testprof.Build(stacks...)
		return rules.Run(facts.New(testprof.Evidence(map[evidence.Kind]*profile.Profile{evidence.CPU: cpu})), []*rules.Rule{Rule})
	}
	exec := []string{"sub_select", "do_select", "JOIN::exec_inner", "JOIN::exec", "mysql_execute_command", "do_command"}
	walk := append([]string{"row_search_mvcc", "ha_innobase::general_fetch", "ha_innobase::rnd_next", "handler::ha_rnd_next", "rr_sequential"}, exec...)
	test := append([]string{"my_strnncollsp_simple", "Item_func_eq::val_bool", "[unknown] mariadbd"}, exec...)
	res := run(
		testprof.Stack{Value: 500, Funcs: walk},
		testprof.Stack{Value: 100, Funcs: test},
		testprof.Stack{Value: 100, Funcs: []string{"my_strnncollsp_simple", "Item_func_eq::val_bool", "check_quick_select"}},
		testprof.Stack{Value: 300, Funcs: []string{"vio_read", "my_net_read", "do_command"}},
	)
	if len(res.Findings) != 1 || !strings.Contains(res.Findings[0].Summary, "MariaDB") {
		t.Fatalf("want a MariaDB scan: %+v", res.Findings)
	}
	// The walk's 50% and the row tests under the query's execution, 10%;
	// a comparison outside it (the optimizer's range check) is not a row test.
	if r := res.Findings[0].ImpactRange; r == nil || r[0] < 0.6-1e-9 || r[0] > 0.6+1e-9 {
		t.Errorf("impact range %v, want it to start at the walk and its row tests, 0.6", r)
	}
	ruletest.Expect(t, "../../corpus/native-mariadb-missing-index/bad", []*rules.Rule{Rule}, `top DB001 high "MariaDB" "index"`)
}
