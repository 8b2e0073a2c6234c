#!/usr/bin/env bash
# Debian's PostgreSQL 15 with its defaults (fsync on, synchronous_commit on,
# wal_sync_method fdatasync) taking an event ingest: one row INSERTed per
# transaction in autocommit mode from 8 connections (pgbench with a custom
# script, prepared statements). Every commit waits until its WAL record is
# flushed to disk (XLogFlush: fdatasync of the WAL segment, shared only by the
# commits that arrive while another is flushing). The fix measured:
# synchronous_commit = off, the setting PostgreSQL offers for data where
# losing the last fraction of a second of commits on a crash is acceptable
# (the database stays consistent; the WAL writer flushes in the background).
# The recorded process is the postmaster; its backends do the work.
source "$(dirname "$0")/../lib.sh" # from corpus/<id>/, once moved there
apt_need postgresql
scenario_init

SCHEMA="
CREATE TABLE events (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  created_at timestamptz NOT NULL DEFAULT now(), device int NOT NULL,
  kind text NOT NULL, value double precision NOT NULL);"
BAD=$(free_port)
rm -rf "$W/bad" "$W/fixed"
pg_start "$W/bad" "$BAD"
BAD_PID=$(pg_postmaster "$W/bad")
FIX=$(free_port)
pg_start "$W/fixed" "$FIX" -c synchronous_commit=off
for p in "$BAD" "$FIX"; do
	psql_run "$p" postgres -c "$SCHEMA"
	psql_run "$p" postgres -At -c "SELECT string_agg(name || '=' || setting, ' ' ORDER BY name) FROM pg_settings
	  WHERE name IN ('fsync', 'synchronous_commit', 'wal_sync_method', 'commit_delay', 'full_page_writes')" >&2
done

cat >"$W/insert.sql" <<'SQL'
\set device random(1, 10000)
\set v random(1, 1000000)
INSERT INTO events (device, kind, value) VALUES (:device, 'reading', :v / 1000.0);
SQL
# The WAL's syncs and the commits over the recording (its warm-up included).
psql_run "$BAD" postgres -c "SELECT pg_stat_reset_shared('wal'), pg_stat_reset()" >/dev/null
after_record() {
	psql_run "$BAD" postgres -At -c "SELECT 'wal syncs ' || w.wal_sync || ', wal writes ' || w.wal_write ||
	  ', commits ' || d.xact_commit || ', syncs per commit ' || round(w.wal_sync::numeric / greatest(d.xact_commit, 1), 3)
	  FROM pg_stat_wal w, pg_stat_database d WHERE d.datname = 'postgres'" >&2
}
# One run: 8 connections x 2,500 single-row INSERTs, each its own transaction
# (about 2 s on the bad side).
N=20000
LOAD="pgbench -h {host} -p {port} -U postgres -n -M prepared -f $W/insert.sql -c 8 -j 2 -t 2500 postgres"
measure_cmd "$BAD_PID" "$BAD" "$FIX" "$HERE" "$N" INSERT "$LOAD"
drop_measured "$HERE" cpu_per_unit # verify reads the listening postmaster, not the backends
