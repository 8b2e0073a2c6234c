// Package db001 detects a database engine scanning whole tables to answer
// queries that an index would answer (finding class redone-work).
package db001

import (
	"fmt"

	"github.com/perfdoctor/perfdoctor/evidence"
	"github.com/perfdoctor/perfdoctor/facts"
	"github.com/perfdoctor/perfdoctor/internal/human"
	"github.com/perfdoctor/perfdoctor/rules"
)

// Rule is DB001.
var Rule = &rules.Rule{
	ID:    "DB001",
	Class: "redone-work",
	Doc: rules.Doc{
		Title: "Queries scan whole tables",
		Text: `A query whose WHERE clause no index covers makes the database read every row of
the table and test the condition on each, for every execution: the work grows with
the table, not with the rows returned. A lookup by an unindexed column (an email, a
token, a foreign key) is the usual shape: cheap on a small table in development,
most of the server's CPU once the table holds production data.`,
		Evidence: `The engine's sequential-scan path, by its own frames, whoever embeds it: H2's
table filter walking the primary index's cursor with the condition tested per row
(TableFilter.next over MVPrimaryIndex$MVStoreCursor.next, Select.isConditionMet),
PostgreSQL's ExecSeqScan/SeqNext/heapgettup, MariaDB's and MySQL's rr_sequential
and handler::ha_rnd_next. Reports from 10% of CPU walking a table. Measured: H2
queried by an unindexed email over 100,000 rows (corpus jvm-h2-missing-index):
the walk 42% of CPU, with the per-row tests 62%, the queries 73%; the same server
with the index (testdata/h2-indexed): the walk 0%, per-row tests 0.5%, queries
14%. An index measured 137x the lookups per second.`,
		Fix: `Find the query (the slow query log, pg_stat_statements, H2's TRACE_LEVEL_FILE or
the service's own query logging), read its plan (EXPLAIN: H2 prints /* tableScan */,
PostgreSQL "Seq Scan" with "Rows Removed by Filter", MySQL type ALL) and create an
index on the columns the WHERE clause filters on. The scan's work then goes away: a
lookup becomes one B-tree descent.`,
		Before: `SELECT id FROM users WHERE email = ?      -- no index on email: every row read`,
		After:  `CREATE INDEX users_email ON users(email); -- one B-tree descent per lookup`,
		Caveats: `A scan is the right plan for a small table, or a query that returns most of
a table; an index costs writes and space. Check the plan and the rows returned.`,
		Since: "0.2",
		Refs: []string{
			"https://www.postgresql.org/docs/current/using-explain.html",
			"https://h2database.com/html/performance.html#explain_plan",
		},
	},
	Needs: []rules.Input{rules.CPU},
	Facts: []facts.Key{facts.CPUStacks},
	Check: check,
}

// engine is one database engine's scan path, and its query path (what
// the scan runs under, the share an index changes).
type engine struct {
	name   string
	scan   evidence.Matcher // walking the table's rows
	perRow evidence.Matcher // testing the condition on each row walked
	// node is the executor's scan node, which holds the walk and the
	// per-row tests alike, and indexFetch an index scan's fetch under it:
	// where the walk dominates the node's fetching, the node's samples are
	// the scan's (PostgreSQL's quals run inside ExecScan, and its static
	// functions are unnamed in a distribution's stripped binary).
	node       evidence.Matcher
	indexFetch evidence.Matcher
	query      evidence.Matcher
	plan       string
}

var engines = []engine{
	{
		name: "H2",
		// A table filter iterating the primary index's cursor is a scan;
		// an index lookup iterates a secondary index's cursor, or none.
		scan:   evidence.FuncPrefix("org.h2.mvstore.db.MVPrimaryIndex$MVStoreCursor.next", "org.h2.index.PageDataCursor.next", "org.h2.index.ScanCursor.next"),
		perRow: evidence.FuncPrefix("org.h2.command.query.Select.isConditionMet", "org.h2.command.dml.Select.isConditionMet"),
		query:  evidence.FuncPrefix("org.h2.command.query.Select.queryFlat", "org.h2.command.query.Select.queryGroup", "org.h2.command.dml.Select.queryFlat"),
		plan:   "EXPLAIN SELECT ... prints /* PUBLIC.TABLE.tableScan */",
	},
	{
		name:   "PostgreSQL",
		scan:   evidence.FuncPrefix("ExecSeqScan", "SeqNext", "heapgettup", "heap_getnextslot", "ExecParallelSeqScan"),
		perRow: evidence.FuncPrefix("ExecQual", "ExecInterpExpr"),
		node:   evidence.FuncPrefix("ExecScan"),
		indexFetch: evidence.FuncPrefix("IndexNext", "IndexOnlyNext", "BitmapHeapNext", "index_getnext", "index_fetch_heap",
			"btgettuple", "_bt_first", "_bt_next", "_bt_search"),
		query: evidence.FuncPrefix("ExecutorRun", "standard_ExecutorRun", "PortalRun"),
		plan:  `EXPLAIN ANALYZE shows "Seq Scan on TABLE" with "Rows Removed by Filter"`,
	},
	{
		name: "MariaDB/MySQL",
		scan: evidence.FuncPrefix("rr_sequential", "handler::ha_rnd_next", "ha_innobase::rnd_next", "ha_myisam::rnd_next", "ha_heap::rnd_next"),
		// MariaDB 10.11 tests a WHERE through val_bool (its corpus
		// recording: 5% of CPU there, under an evaluate_join_record
		// Debian's binary leaves unnamed); older servers through val_int.
		perRow: evidence.FuncPrefix("evaluate_join_record", "Item_func_eq::val_int", "Item_cond_and::val_int",
			"Item_func_eq::val_bool", "Item_cond_and::val_bool"),
		query: evidence.FuncPrefix("mysql_execute_command", "JOIN::exec", "do_select"),
		plan:  "EXPLAIN shows type ALL for the table",
	},
}

// minShare is the table walk's share of CPU from which a scan is reported:
// the unindexed H2 lookup spends 42% there, the indexed one 0%.
const minShare = 0.10

func check(pass *rules.Pass) error {
	if !pass.EnoughCPU() {
		return nil
	}
	cpu := facts.Get(pass.Facts, facts.CPUStacks)
	var best engine
	var bestShare float64
	for _, e := range engines {
		if s := cpu.Share(e.scan); s > bestShare {
			best, bestShare = e, s
		}
	}
	if bestShare < minShare {
		return nil
	}
	// An index removes the walk and the per-row tests (in a scan's query:
	// PostgreSQL and MariaDB test rows under the scan node, H2 beside its
	// cursor); the high end is every query running a scan.
	scan, perRow, query := cpu.Has(best.scan), cpu.Has(best.perRow), cpu.Has(best.query)
	scanQueries := cpu.ShareWhere(query)
	inScan := func(s evidence.Sample) bool { return scan(s) || (perRow(s) && query(s)) }
	if best.node != nil && bestShare >= 4*cpu.Share(best.indexFetch) {
		node := cpu.Has(best.node)
		inScan = func(s evidence.Sample) bool { return scan(s) || node(s) || (perRow(s) && query(s)) }
	}
	work := cpu.ShareWhere(inScan)
	low, high := work, max(work, scanQueries)
	f := rules.Finding{
		Severity:    rules.SeverityFor(low),
		Impact:      rules.Midway(low, high),
		ImpactRange: &[2]float64{low, high},
		RemovesWork: true, // an index replaces the walk with one descent
		Resource:    "cpu",
		ImpactBasis: "share of CPU walking tables and testing each row: an index turns a lookup into one B-tree descent, so both go; " +
			"the high end is all query execution, which the scan's queries may be most of; the estimate is midway, since how much of the rest of the execution the index also saves the profile cannot say",
		Summary: fmt.Sprintf("%s scans whole tables to answer queries: walking the rows and testing each is %s of CPU",
			best.name, human.Percent(work)),
		Evidence: []rules.Fact{
			rules.Text("engine", best.name),
			rules.Share("walking the table's rows, share of CPU", bestShare),
			rules.Share("walking and testing each row, share of CPU", work),
			rules.Share("query execution share of CPU", scanQueries),
			rules.Text("how to see it in the plan", best.plan),
		},
		Fix: fmt.Sprintf("Find the query (the slow query log, pg_stat_statements, %s's own tracing or the service's query logging), "+
			"read its plan (%s) and create an index on the columns its WHERE clause filters on: each lookup then becomes one B-tree descent.",
			best.name, best.plan),
		Example: pass.Rule.Doc.Before + "\n->\n" + pass.Rule.Doc.After,
		Caveats: []string{pass.Rule.Doc.Caveats},
		Frames:  cpu.Matched(best.scan, 12),
	}
	f.Claim = &rules.Claim{Level: rules.LevelCode, CPU: inScan, Regrade: rules.SeverityFor}
	pass.Report(f)
	return nil
}
