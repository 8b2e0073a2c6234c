#!/usr/bin/env bash
# Healthy: Debian's PostgreSQL 15 with its default settings answering
# pgbench's select-only workload (-S: a primary-key lookup in
# pgbench_accounts, scale 10 = 1,000,000 rows, 160 MB) with prepared
# statements from 8 connections: index lookups from the buffer cache, the
# machine's two cores saturated by the backends and pgbench. The plausible
# change measured: shared_buffers 128 MB -> 512 MB (the whole table cached
# by PostgreSQL rather than by the kernel's page cache). The recorded
# process is the postmaster, as a user would name it; the backends (its
# children) do the work.
source "$(dirname "$0")/../lib.sh" # from corpus/<id>/, once moved there
apt_need postgresql
scenario_init

BAD=$(free_port)
rm -rf "$W/base" "$W/alt"
pg_start "$W/base" "$BAD"
BAD_PID=$(pg_postmaster "$W/base")
ALT=$(free_port)
pg_start "$W/alt" "$ALT" -c shared_buffers=512MB
for p in "$BAD" "$ALT"; do
	pgbench -h 127.0.0.1 -p "$p" -U postgres -i -s 10 -q postgres >/dev/null 2>&1
	psql_run "$p" postgres -c 'SHOW shared_buffers' >&2
done

# One run: 8 connections x 5,000 lookups.
N=40000
LOAD='pgbench -h {host} -p {port} -U postgres -n -S -M prepared -c 8 -j 2 -t 5000 postgres'
wait_idle
pd_record_cmd --perf "$BAD_PID" "$BAD" "$HERE/bad" 20 "$N" lookup "$LOAD" --warmup 5s
pd_verify_cmd "$BAD" "$ALT" "$HERE" "$N" lookup "$LOAD" -d 10s --rounds 6 --warmup 2s
set_measured "$HERE" throughput
drop_measured "$HERE" cpu_per_unit # verify reads the listening postmaster, not the backends
