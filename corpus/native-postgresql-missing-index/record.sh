#!/usr/bin/env bash
# Debian's PostgreSQL 15 with a users table of 200,000 rows and no index on
# email, looked up by email (a login or an account page): every query scans
# the whole table. pgbench runs the lookup from 8 connections. The fix
# measured: CREATE INDEX on users (email). The recorded process is the
# postmaster, as a user would name it; the backends (its children) do the
# work.
source "$(dirname "$0")/../lib.sh"
apt_need postgresql
scenario_init

SCHEMA="
CREATE TABLE users (id bigint PRIMARY KEY, email text NOT NULL, name text NOT NULL,
  created_at timestamptz NOT NULL, plan text NOT NULL);
INSERT INTO users SELECT i, 'user' || i || '@example.com', 'User ' || i,
  now() - (i || ' minutes')::interval, (ARRAY['free','pro','team'])[1 + i % 3]
  FROM generate_series(1, 200000) i;"
BAD=$(free_port)
rm -rf "$W/bad" "$W/fix"
pg_start "$W/bad" "$BAD"
BAD_PID=$(pg_postmaster "$W/bad")
# psql runs one -c string as one transaction, where VACUUM cannot run.
psql_run "$BAD" postgres -c "$SCHEMA" -c 'VACUUM ANALYZE users'
FIX=$(free_port)
pg_start "$W/fix" "$FIX"
psql_run "$FIX" postgres -c "$SCHEMA" -c 'CREATE INDEX users_email ON users (email)' -c 'VACUUM ANALYZE users'
psql_run "$BAD" postgres -c "EXPLAIN SELECT id, name, plan FROM users WHERE email = 'user5@example.com'" >&2

cat >"$W/lookup.sql" <<'SQL'
\set id random(1, 200000)
SELECT id, name, plan FROM users WHERE email = 'user' || :id || '@example.com';
SQL
# One run: 8 connections x 100 lookups (several seconds on the bad side).
N=800
LOAD="pgbench -h {host} -p {port} -U postgres -n -f $W/lookup.sql -c 8 -j 2 -t 100 postgres"
measure_cmd "$BAD_PID" "$BAD" "$FIX" "$HERE" "$N" lookup "$LOAD" 20 20
drop_measured "$HERE" cpu_per_unit # verify reads the listening postmaster, not the backends
