#!/usr/bin/env bash
# Debian's PostgreSQL 15 with log_statement = 'all', the setting operators
# turn on to see what an application sends and then leave on: every
# statement (with prepared statements, every execute and its parameters) is
# logged. The server logs to stderr, redirected to a file (no logging
# collector: the postgres command's default, as under pg_ctl -l), so every
# backend writes its own lines to the one shared file. Workload: pgbench's
# select-only lookups (-S, scale 10) with prepared statements from 8
# connections, as in native-postgresql-select-healthy. The fix: the default,
# log_statement = 'none'. The recorded process is the postmaster; its
# backends do the work.
source "$(dirname "$0")/../lib.sh" # from corpus/<id>/, once moved there
apt_need postgresql
scenario_init

BAD=$(free_port)
rm -rf "$W/bad" "$W/fixed"
pg_start "$W/bad" "$BAD" -c log_statement=all
BAD_PID=$(pg_postmaster "$W/bad")
FIX=$(free_port)
pg_start "$W/fixed" "$FIX"
for p in "$BAD" "$FIX"; do
	psql_run "$p" postgres -c 'SHOW log_statement' >&2
done
# The statement log's size after the recording, then emptied (150 MB).
after_record() {
	ls -l "$W/bad.log" >&2
	: >"$W/bad.log"
}
pgbench_lookups "$BAD" "$BAD_PID" "$FIX" "$HERE"
