#!/usr/bin/env bash
# CoreDNS 1.15.0 (go install from the module proxy) answering for a zone it
# serves itself (the `file` plugin, no upstream), with the `log` plugin left
# on in the server block after some debugging: every query is written to
# stdout, redirected to a file as a container's log would be. 32 UDP clients
# ask api.corp.example/A over and over. The fix measured: the same server
# block without `log` (`errors` kept); its side is recorded too (fixed/).
source "$(dirname "$0")/../lib.sh"
HERE=$(cd "$(dirname "$0")" && pwd)
go_install github.com/coredns/coredns@v1.15.0
COREDNS=$GO_BIN
# Building perfdoctor and the start-ups are CPU work too: all under the lock.
cpu_lock
pd_build
WORK=$(mktemp -d)

coredns_zone "$WORK"

# authority PORT PPROF EXTRA: a CoreDNS authoritative for the zone, its
# stdout (where `log` writes) in WORK/stdout.PORT.
authority() {
	printf '%s\n' "corp.example:$1 {
	bind 127.0.0.1
	pprof 127.0.0.1:$2
	errors$3
	file $WORK/db.corp.example
}" >"$WORK/Corefile.$1"
	bg "$COREDNS" -conf "$WORK/Corefile.$1" -dns.port "$1" >"$WORK/stdout.$1"
	wait_port "$1"
}
BAD=$(free_port) BAD_PPROF=$(free_port)
authority "$BAD" "$BAD_PPROF" '
	log'
GOOD=$(free_port) GOOD_PPROF=$(free_port)
authority "$GOOD" "$GOOD_PPROF" ''

wait_idle 60
echo "load average before: $(cat /proc/loadavg)" >&2
"$PD" run --target "http://127.0.0.1:$BAD_PPROF" --load "udp://127.0.0.1:$BAD" --body "$WORK/query.bin" \
	-c 32 --warmup 5s -d 20s -o "$WORK/run" >"$WORK/run.txt"
grep -E '^ *load:|^ *[0-9]+\. \[' "$WORK/run.txt" >&2 || true
keep_bundle "$WORK/run" "$HERE/bad"
echo "query log after the recording: $(wc -lc <"$WORK/stdout.$BAD") (lines, bytes); a line: $(tail -n1 "$WORK/stdout.$BAD")" >&2
"$PD" verify --before "udp://127.0.0.1:$BAD" --after "udp://127.0.0.1:$GOOD" --body "$WORK/query.bin" \
	-c 32 --rounds 6 -d 5s --out "$WORK/verify" >&2 || [ $? -eq 4 ]
record_verify "$WORK/verify" "$HERE"
"$PD" run --target "http://127.0.0.1:$GOOD_PPROF" --load "udp://127.0.0.1:$GOOD" --body "$WORK/query.bin" \
	-c 32 --warmup 5s -d 20s -o "$WORK/run-fixed" >"$WORK/run-fixed.txt"
grep -E '^ *load:|^ *[0-9]+\. \[' "$WORK/run-fixed.txt" >&2 || true
keep_bundle "$WORK/run-fixed" "$HERE/fixed"
echo "load average after: $(cat /proc/loadavg); query log: $(wc -c <"$WORK/stdout.$BAD") bytes, fixed side's stdout $(wc -l <"$WORK/stdout.$GOOD") lines" >&2
rm -rf "$WORK"
