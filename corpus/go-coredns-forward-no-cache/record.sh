#!/usr/bin/env bash
# CoreDNS 1.15.0 (go install from the module proxy) as the resolver clients
# ask, forwarding every query to an authoritative CoreDNS (the `file`
# plugin) with no `cache` plugin in its server block: every answer is a
# round trip upstream, though the records have a 300 s TTL. The fix
# measured: `cache 30` in the server block.
source "$(dirname "$0")/../lib.sh"
HERE=$(cd "$(dirname "$0")" && pwd)
go_install github.com/coredns/coredns@v1.15.0
COREDNS=$GO_BIN
pd_build
WORK=$(mktemp -d)

coredns_zone "$WORK"

# start_coredns PORT COREFILE_BODY
start_coredns() {
	printf '%s\n' "$2" >"$WORK/Corefile.$1"
	bg "$COREDNS" -conf "$WORK/Corefile.$1" -dns.port "$1"
	wait_port "$1"
}
UP=$(free_port)
start_coredns "$UP" "corp.example:$UP {
	bind 127.0.0.1
	file $WORK/db.corp.example
}"
# resolver PORT PPROF EXTRA: the resolver under test.
resolver() {
	start_coredns "$1" ".:$1 {
	bind 127.0.0.1
	pprof 127.0.0.1:$2
	$3
	forward . 127.0.0.1:$UP
}"
}
BAD=$(free_port) BAD_PPROF=$(free_port)
resolver "$BAD" "$BAD_PPROF" ''
GOOD=$(free_port) GOOD_PPROF=$(free_port)
resolver "$GOOD" "$GOOD_PPROF" 'cache 30'

cpu_lock
wait_idle
"$PD" run --target "http://127.0.0.1:$BAD_PPROF" --load "udp://127.0.0.1:$BAD" --body "$WORK/query.bin" \
	-c 32 --warmup 5s -d 20s -o "$WORK/run" >"$WORK/run.txt"
keep_bundle "$WORK/run" "$HERE/bad"
"$PD" verify --before "udp://127.0.0.1:$BAD" --after "udp://127.0.0.1:$GOOD" --body "$WORK/query.bin" \
	-c 32 --rounds 6 -d 5s --out "$WORK/verify"
record_verify "$WORK/verify" "$HERE"
rm -rf "$WORK"
