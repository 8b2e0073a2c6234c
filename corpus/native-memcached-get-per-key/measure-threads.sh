#!/usr/bin/env bash
# The operator's first guess on this scenario, measured: memcached's thread
# count. Debian's memcached 1.6 as a cache with one worker thread (-t 1: a setting
# carried over from a small VM, or copied from a guide that meant "one per
# core" there), serving 256 client connections: memcaslap (libmemcached's
# memaslap) with 2 threads, 256 connections, 90% get / 10% set of 100-byte
# values. memcached's listener hands every connection to its workers, so one
# worker thread reads, parses and answers all 256 connections' requests. The
# fix measured is memcached's default, -t 4 (the operator deletes the -t 1
# line from memcached.conf). Both sides: -m 1024 (room for every item a
# recording writes, so no eviction), UDP off, Debian's defaults otherwise.
# The machine has 2 cores, which memcaslap shares with memcached: whether the
# thread count matters here is what verify measures; its result goes to
# verify-threads.json, the recording (bad/) and verify.json staying
# record.sh's.
source "$(dirname "$0")/../lib.sh"
apt_need memcached libmemcached-tools
scenario_init

BAD=$(free_port)
memcached_start "$BAD" 1
BAD_PID=$BG_PID
FIX=$(free_port)
memcached_start "$FIX" 4
FIX_PID=$BG_PID

# A run is 102,400 operations (400 per connection: memcaslap rounds -x
# down to a multiple of its connections); the unit is an operation, get
# or set. Each run's gets read keys its own sets wrote (no misses).
N=102400
LOAD="memcaslap -s {host}:{port} -T 2 -c 256 -X 100 -w 1k -x $N"

# after_record: one more run on each side, with memcached's threads' CPU
# (from /proc) and its stats before and after, kept in $W/threads.txt for
# the notes.
after_record() {
	local side port pid t
	rm -f "$W/threads.txt"
	for side in bad:$BAD:$BAD_PID fixed:$FIX:$FIX_PID; do
		IFS=: read -r side port pid <<<"$side"
		{
			echo "== $side (port $port, pid $pid)"
			for t in /proc/"$pid"/task/*; do echo "before $(cat "$t/comm") $(awk '{print $14, $15}' "$t/stat")"; done
			head -1 /proc/stat
			/usr/bin/time -f "memcaslap: %e s wall, %U s user, %S s sys" \
				memcaslap -s "127.0.0.1:$port" -T 2 -c 256 -X 100 -w 1k -x "$N" 2>&1 | grep -E 'TPS|memcaslap:'
			head -1 /proc/stat
			for t in /proc/"$pid"/task/*; do echo "after $(cat "$t/comm") $(awk '{print $14, $15}' "$t/stat")"; done
			memcstat --servers="127.0.0.1:$port" | grep -E 'threads|conn_yields|curr_items|evictions|get_misses|rusage|total_connections|listen_disabled'
		} >>"$W/threads.txt" 2>&1
	done
	cat "$W/threads.txt" >&2
}
wait_idle
after_record
tmp=$(mktemp -d)
pd_verify_cmd "$BAD" "$FIX" "$tmp" "$N" op "$LOAD" -d 10s --rounds 6 --warmup 2s 2>&1 |
	grep -v 'scenario.json is not written yet' >&2
install -m 644 "$tmp/verify.json" "$HERE/verify-threads.json"
rm -rf "$tmp"
