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
	pgbench -h 127.0.0.1 -p "$p" -U postgres -i -s 10 -q postgres >/dev/null 2>&1
	psql_run "$p" postgres -c 'SHOW log_statement' >&2
done

N=40000
LOAD='pgbench -h {host} -p {port} -U postgres -n -S -M prepared -c 8 -j 2 -t 5000 postgres'
wait_idle
pd_record_cmd --perf "$BAD_PID" "$BAD" "$HERE/bad" 20 "$N" lookup "$LOAD" --warmup 5s
ls -l "$W/bad.log" >&2 # the statement log's size after the recording
: >"$W/bad.log"
pd_verify_cmd "$BAD" "$FIX" "$HERE" "$N" lookup "$LOAD" -d 10s --rounds 6 --warmup 2s
set_measured "$HERE" throughput
drop_measured "$HERE" cpu_per_unit # verify reads the listening postmaster, not the backends
