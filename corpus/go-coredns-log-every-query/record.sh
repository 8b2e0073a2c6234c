#!/usr/bin/env bash
# CoreDNS 1.15.0 (go install from the module proxy) answering from its cache
# with the `log` plugin left in the server block (turned on to debug a lookup
# and never taken out): one formatted line per query written to its stdout,
# a log file. The fix measured: the `log` line removed (`errors` stays).
source "$(dirname "$0")/../lib.sh"
HERE=$(cd "$(dirname "$0")" && pwd)
go_install github.com/coredns/coredns@v1.15.0
COREDNS=$GO_BIN
pd_build
WORK=$(mktemp -d)

cat >"$WORK/db.corp.example" <<'ZONE'
$ORIGIN corp.example.
@	3600 IN SOA ns1 hostmaster 2026112701 7200 3600 1209600 300
	3600 IN NS ns1
ns1	300 IN A 10.0.0.53
api	300 IN A 10.0.1.10
api	300 IN A 10.0.1.11
db	300 IN A 10.0.2.20
ZONE
python3 -c '
import struct, sys
q = struct.pack(">HHHHHH", 0x2a2a, 0x0100, 1, 0, 0, 0)
q += b"".join(bytes([len(l)]) + l.encode() for l in "api.corp.example".split(".")) + b"\0"
q += struct.pack(">HH", 1, 1)
sys.stdout.buffer.write(q)' >"$WORK/query.bin"

# start_coredns PORT COREFILE_BODY: its stdout (the query log) goes to a file.
start_coredns() {
	printf '%s\n' "$2" >"$WORK/Corefile.$1"
	bg "$COREDNS" -conf "$WORK/Corefile.$1" -dns.port "$1" >"$WORK/coredns.$1.log"
	wait_port "$1"
}
UP=$(free_port)
start_coredns "$UP" "corp.example:$UP {
	bind 127.0.0.1
	file $WORK/db.corp.example
}"
# resolver PORT PPROF EXTRA: a caching resolver in front of the zone's server.
resolver() {
	start_coredns "$1" ".:$1 {
	bind 127.0.0.1
	pprof 127.0.0.1:$2
	errors
	$3
	cache 30
	forward . 127.0.0.1:$UP
}"
}
BAD=$(free_port) BAD_PPROF=$(free_port)
resolver "$BAD" "$BAD_PPROF" 'log'
GOOD=$(free_port) GOOD_PPROF=$(free_port)
resolver "$GOOD" "$GOOD_PPROF" ''

cpu_lock
wait_idle
"$PD" run --target "http://127.0.0.1:$BAD_PPROF" --load "udp://127.0.0.1:$BAD" --body "$WORK/query.bin" \
	-c 32 --warmup 5s -d 20s -o "$WORK/run" >"$WORK/run.txt"
keep_bundle "$WORK/run" "$HERE/bad"
"$PD" verify --before "udp://127.0.0.1:$BAD" --after "udp://127.0.0.1:$GOOD" --body "$WORK/query.bin" \
	-c 32 --rounds 6 -d 6s --out "$WORK/verify"
record_verify "$WORK/verify" "$HERE"
rm -rf "$WORK"
