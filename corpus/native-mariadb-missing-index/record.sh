#!/usr/bin/env bash
# Debian's MariaDB 10.11 with a users table of 50,000 rows and no index on
# email, looked up by email (a login or an account page): every query reads
# the whole table. sysbench runs the lookup (a Lua script of its own) from 4
# connections. The fix measured: CREATE INDEX on users (email).
source "$(dirname "$0")/../lib.sh"
apt_need mariadb-server sysbench
scenario_init

ROWS=50000
SCHEMA="
CREATE DATABASE app;
USE app;
CREATE TABLE app.users (id BIGINT PRIMARY KEY, email VARCHAR(100) NOT NULL, name VARCHAR(100) NOT NULL,
  created_at DATETIME NOT NULL, plan VARCHAR(10) NOT NULL);
INSERT INTO app.users SELECT seq, CONCAT('user', seq, '@example.com'), CONCAT('User ', seq),
  NOW() - INTERVAL seq MINUTE, ELT(1 + seq % 3, 'free', 'pro', 'team') FROM seq_1_to_$ROWS;
ANALYZE TABLE app.users;"
COMMON=(innodb_buffer_pool_size=256M)
BAD=$(free_port)
mariadb_start "$BAD" "$W/bad" "${COMMON[@]}"
BAD_PID=$BG_PID
FIX=$(free_port)
mariadb_start "$FIX" "$W/fix" "${COMMON[@]}"
mariadb -h 127.0.0.1 -P "$BAD" -u root -e "$SCHEMA" >/dev/null
mariadb -h 127.0.0.1 -P "$FIX" -u root -e "$SCHEMA CREATE INDEX users_email ON app.users (email);" >/dev/null
mariadb -h 127.0.0.1 -P "$BAD" -u root -e "EXPLAIN SELECT id, name, plan FROM app.users WHERE email = 'user5@example.com'" >&2

cat >"$W/lookup.lua" <<LUA
-- One event: a user looked up by email, as a login or an account page does.
function thread_init()
  drv = sysbench.sql.driver()
  con = drv:connect()
end
function thread_done()
  con:disconnect()
end
function event()
  con:query_row(string.format("SELECT id, name, plan FROM users WHERE email = 'user%d@example.com'",
    sysbench.rand.uniform(1, $ROWS)))
end
LUA
# One run: 4 connections, 160 lookups in all (about 4 s on the bad side).
N=160
LOAD="sysbench --db-driver=mysql --mysql-host={host} --mysql-port={port} --mysql-user=root --mysql-db=app --threads=4 --events=$N --time=0 $W/lookup.lua run"
measure_cmd "$BAD_PID" "$BAD" "$FIX" "$HERE" "$N" lookup "$LOAD" 15 8
