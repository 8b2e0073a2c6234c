#!/usr/bin/env bash
# Debian's redis-server 7.0 with the append-only file on and
# `appendfsync always`: every write command's reply waits for the AOF's
# write and fdatasync. The load: redis-benchmark SET, 16 clients, 100-byte
# values over 100,000 keys. The fix measured: `appendfsync everysec` (the
# default), which moves the fdatasync to a background thread once a second.
source "$(dirname "$0")/../lib.sh"
apt_need redis-server redis-tools
scenario_init

BAD=$(free_port)
redis_start "$BAD" "$W/bad" 'appendonly yes' 'appendfsync always'
BAD_PID=$BG_PID
FIX=$(free_port)
redis_start "$FIX" "$W/fix" 'appendonly yes' 'appendfsync everysec'
FIX_PID=$BG_PID
redis-cli -p "$BAD" config get appendfsync | tr '\n' ' ' >&2; echo >&2

# One run: 20,000 SETs from 16 connections (a second or two on the bad side).
N=20000
LOAD='redis-benchmark -h {host} -p {port} -t set -n 20000 -c 16 -d 100 -r 100000 -q'
measure_cmd "$BAD_PID" "$BAD" "$FIX" "$HERE" "$N" SET "$LOAD"
pd_record_cmd --perf "$FIX_PID" "$FIX" "$HERE/fixed" 20 "$N" SET "$LOAD" --warmup 5s
