#!/usr/bin/env bash
# Debian's PgBouncer 1.18 in front of Debian's PostgreSQL 15 in transaction
# pooling with default_pool_size = 1: 16 client connections share one server
# connection. pgbench runs a lookup that holds its server connection about
# 5 ms (pg_sleep(0.005), a slow query or a lock wait, spent off the CPUs)
# from 16 connections through PgBouncer. The fix measured: default_pool_size
# = 16, a second PgBouncer with the same settings otherwise, on the same
# PostgreSQL. The recorded process is pgbouncer, the pool.
source "$(dirname "$0")/../lib.sh"
apt_need postgresql pgbouncer
scenario_init

PG=$(free_port)
rm -rf "$W/pg" "$W/bouncer"
pg_start "$W/pg" "$PG"
pgbench -h 127.0.0.1 -p "$PG" -U postgres -i -s 1 -q postgres >/dev/null 2>&1
mkdir -p "$W/bouncer"
echo '"postgres" ""' >"$W/bouncer/userlist.txt"
chown -R postgres: "$W/bouncer"

# bouncer_start NAME PORT POOL: a pgbouncer (run as postgres: it refuses
# root) on 127.0.0.1:PORT pooling PostgreSQL's postgres database in
# transaction mode with default_pool_size POOL; sets BOUNCER_PID.
bouncer_start() {
	local name=$1 port=$2 pool=$3 conf="$W/bouncer/$1.ini"
	cat >"$conf" <<INI
[databases]
postgres = host=127.0.0.1 port=$PG dbname=postgres user=postgres

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = $port
unix_socket_dir =
auth_type = trust
auth_file = $W/bouncer/userlist.txt
admin_users = postgres
pool_mode = transaction
default_pool_size = $pool
max_client_conn = 200
logfile = $W/bouncer/$name.log
pidfile = $W/bouncer/$name.pid
INI
	chown postgres: "$conf"
	bg runuser -u postgres -- pgbouncer "$conf"
	wait_port "$port"
	BOUNCER_PID=$(cat "$W/bouncer/$name.pid")
}
BAD=$(free_port)
bouncer_start bad "$BAD" 1
BAD_PID=$BOUNCER_PID
FIX=$(free_port)
bouncer_start fix "$FIX" 16

cat >"$W/lookup.sql" <<'SQL'
\set aid random(1, 100000)
SELECT abalance, pg_sleep(0.005) FROM pgbench_accounts WHERE aid = :aid;
SQL
# One run: 16 connections x 40 lookups (about 4 s through one server
# connection). pgbench's simple protocol: transaction pooling does not keep
# a prepared statement's connection.
N=640
LOAD="pgbench -h {host} -p {port} -U postgres -n -f $W/lookup.sql -c 16 -j 2 -t 40 postgres"

# after_record: the pools as PgBouncer's admin console shows them in the
# middle of a run on each side, kept in $W/pools.txt for the notes.
after_record() {
	local p load
	for p in "$BAD" "$FIX"; do
		pgbench -h 127.0.0.1 -p "$p" -U postgres -n -f "$W/lookup.sql" -c 16 -j 2 -T 3 postgres >"$W/pools-$p.pgbench" 2>&1 &
		load=$!
		sleep 1.5
		{
			echo "== port $p"
			psql -h 127.0.0.1 -p "$p" -U postgres pgbouncer -c 'SHOW POOLS' -c 'SHOW STATS'
		} >>"$W/pools.txt" 2>&1
		wait "$load"
		grep -E 'tps|latency average' "$W/pools-$p.pgbench" >>"$W/pools.txt"
	done
	cat "$W/pools.txt" >&2
}
rm -f "$W/pools.txt"
measure_cmd "$BAD_PID" "$BAD" "$FIX" "$HERE" "$N" lookup "$LOAD" 20 10
