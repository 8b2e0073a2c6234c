#!/usr/bin/env bash
# Debian's redis-server 7.0 as a cache of 100,000 items (100-byte values),
# read by a client that fetches the ten items a page needs with ten GETs,
# one round trip each: redis-benchmark GET, 32 connections. The fix is the
# client's: one MGET of the ten keys. Both sides are the same server
# configuration; the load command picks the client's shape by the port it
# is given ({port}), since verify runs one command against both sides.
source "$(dirname "$0")/../lib.sh"
apt_need redis-server redis-tools
scenario_init

BAD=$(free_port)
redis_start "$BAD" "$W/bad"
BAD_PID=$BG_PID
FIX=$(free_port)
redis_start "$FIX" "$W/fix"
for p in "$BAD" "$FIX"; do
	redis-benchmark -p "$p" -t set -n 300000 -r 100000 -d 100 -c 16 -q >/dev/null
	redis-cli -p "$p" dbsize >&2
done

# A run fetches 100,000 keys (redis-benchmark's key:__rand_int__ are the
# keys its SETs above wrote): 100,000 GETs, or 10,000 MGETs of ten keys.
N=100000
K=key:__rand_int__
GET="redis-benchmark -h {host} -p {port} -c 32 -n 100000 -r 100000 -q GET $K"
MGET="redis-benchmark -h {host} -p {port} -c 32 -n 10000 -r 100000 -q MGET $K $K $K $K $K $K $K $K $K $K"
LOAD="if [ {port} = $BAD ]; then $GET; else $MGET; fi"
wait_idle
pd_record_cmd --perf "$BAD_PID" "$BAD" "$HERE/bad" 20 "$N" key "$GET" --warmup 5s
pd_verify_cmd "$BAD" "$FIX" "$HERE" "$N" key "$LOAD" -d 10s --rounds 6 --warmup 2s
set_measured "$HERE" throughput
