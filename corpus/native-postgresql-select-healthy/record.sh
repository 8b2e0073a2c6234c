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
	psql_run "$p" postgres -c 'SHOW shared_buffers' >&2
done
pgbench_lookups "$BAD" "$BAD_PID" "$ALT" "$HERE"
