#!/usr/bin/env bash
# Debian's MariaDB 10.11 with the binary log on and both logs flushed at
# every commit (innodb_flush_log_at_trx_commit=1, sync_binlog=1), taking
# single-row INSERTs in autocommit mode from 8 connections (sysbench
# oltp_insert: an event or metrics ingest). Each commit waits for the redo
# log's and the binlog's fdatasync (group commit shares a flush among the
# commits that arrive together). The fix measured:
# innodb_flush_log_at_trx_commit=2 and sync_binlog=0, the logs written at
# commit and flushed about once a second.
source "$(dirname "$0")/../lib.sh" # from corpus/<id>/, once moved there
apt_need mariadb-server sysbench
scenario_init

COMMON=(innodb_buffer_pool_size=256M innodb_log_file_size=256M "log_bin=binlog" server_id=1)
BAD=$(free_port)
mariadb_start "$BAD" "$W/bad" "${COMMON[@]}" innodb_flush_log_at_trx_commit=1 sync_binlog=1
BAD_PID=$BG_PID
FIX=$(free_port)
mariadb_start "$FIX" "$W/fix" "${COMMON[@]}" innodb_flush_log_at_trx_commit=2 sync_binlog=0

SB="sysbench --db-driver=mysql --mysql-host=127.0.0.1 --mysql-user=root --mysql-db=sbtest --tables=4 --table-size=10000"
for p in "$BAD" "$FIX"; do
	mariadb -h 127.0.0.1 -P "$p" -u root -e 'create database sbtest'
	$SB --mysql-port="$p" --threads=4 oltp_insert prepare >/dev/null
done

# One run: 5,000 single-row INSERTs (autocommit) from 8 connections.
N=5000
LOAD="$SB --mysql-port={port} --threads=8 --events=$N --time=0 oltp_insert run"
# A 10 s recording window (the load runs on while perf script reads the stacks).
measure_cmd "$BAD_PID" "$BAD" "$FIX" "$HERE" "$N" INSERT "$LOAD" 10
