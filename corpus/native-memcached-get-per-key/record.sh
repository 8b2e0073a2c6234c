#!/usr/bin/env bash
# Debian's memcached 1.6 with one worker thread (-t 1), read by a client that
# fetches one key per get: memcaslap (libmemcached's memaslap), 2 threads,
# 256 connections, 90% get / 10% set of 100-byte values. The fix measured is
# the client's: multi-get of ten keys (memcaslap -d 10: "get k1 ... k10",
# one round trip for ten keys), against the same server on both sides; the
# load command picks the client's shape by the port it is given ({port}),
# since verify runs one command against both sides. The server's thread
# count, the operator's first guess, is measured by measure-threads.sh.
source "$(dirname "$0")/../lib.sh"
apt_need memcached libmemcached-tools strace
scenario_init

BAD=$(free_port)
memcached_start "$BAD" 1
BAD_PID=$BG_PID
FIX=$(free_port)
memcached_start "$FIX" 1

# A run is 102,400 operations (400 per connection), each a get
# or a set of one key. memcaslap counts an operation per key with or without
# -d (ms_multi_getset_task_sch in libmemcached 1.1.4's memaslap: each key
# added to a multi-get uses one of -x; a set is sent on its own, between
# batches), and picks get or set by the same 90/10 counter either way, so a
# run fetches 92,160 keys on both sides: the unit is a key fetched. The
# check below counts them (memcached's cmd_get and cmd_set) and the
# requests (the client's sendmsg calls) for one run of each shape.
N=102400
KEYS=92160
SINGLE="memcaslap -s {host}:{port} -T 2 -c 256 -X 100 -w 1k -x $N"
MULTI="$SINGLE -d 10"
LOAD="if [ {port} = $BAD ]; then $SINGLE; else $MULTI; fi"

# mc_stat PORT NAME: one of memcached's counters.
mc_stat() {
	memcstat --servers="127.0.0.1:$1" | awk -v k="$2" '$1 == k":" {print $2}'
}
# check PORT SHAPE CMD: one run of CMD under strace, with memcached's
# counters before and after, into $W/multiget-check.txt.
check() {
	local port=$1 shape=$2 cmd=${3//\{host\}/127.0.0.1} g0 s0 h0 m0 out
	cmd=${cmd//\{port\}/$port}
	g0=$(mc_stat "$port" cmd_get) s0=$(mc_stat "$port" cmd_set) h0=$(mc_stat "$port" get_hits) m0=$(mc_stat "$port" get_misses)
	out=$(mktemp)
	strace -f -c -o "$out" -e trace=sendmsg,sendto,write,read,recvfrom,connect $cmd >/dev/null 2>&1
	{
		echo "== $shape (port $port): $cmd"
		echo "memcached: cmd_get +$(($(mc_stat "$port" cmd_get) - g0)) cmd_set +$(($(mc_stat "$port" cmd_set) - s0))" \
			"get_hits +$(($(mc_stat "$port" get_hits) - h0)) get_misses +$(($(mc_stat "$port" get_misses) - m0))"
		echo "client syscalls (strace -c):"
		sed -n '/^---/,$p' "$out" | grep -E 'sendmsg|sendto|write|read|recvfrom|connect'
	} >>"$W/multiget-check.txt"
	rm -f "$out"
}
rm -f "$W/multiget-check.txt"
check "$BAD" single "$SINGLE"
check "$FIX" multi "$MULTI"
cat "$W/multiget-check.txt" >&2

# The recording: the -t 1 server under the one-key load, its unit an
# operation (get or set), as first recorded.
wait_idle
pd_record_cmd --perf "$BAD_PID" "$BAD" "$HERE/bad" 20 "$N" op "$SINGLE" --warmup 5s
wait_idle 60
pd_verify_cmd "$BAD" "$FIX" "$HERE" "$KEYS" key "$LOAD" -d 10s --rounds 6 --warmup 2s
set_measured "$HERE" throughput
