#!/usr/bin/env bash
# NATS server 2.15.3 (go install from the module proxy) left running with
# -DV (debug and protocol trace) after a debugging session, its log going to
# a file (-l) as a service's would: every protocol line a client sends or
# receives, each message's payload among them, is written to the log. The
# load: natscli 0.5.1's `nats bench pub`, 4 publishers sending 128-byte
# messages on one subject, with one subscriber on that subject (`nats bench
# sub`, kept up for the whole script) receiving each. The fix measured: the
# same server without -DV; its side is recorded too (fixed/). The gain is
# the server's CPU per message (verify's CPU/unit): the clients share the
# two cores with it.
source "$(dirname "$0")/../lib.sh"
HERE=$(cd "$(dirname "$0")" && pwd)
go_install github.com/nats-io/nats-server/v2@v2.15.3
NATS_SERVER=$GO_BIN
go_install github.com/nats-io/natscli/nats@v0.5.1
NATS=$GO_BIN
# Building perfdoctor and the start-ups are CPU work too: all under the lock.
cpu_lock
pd_build
WORK=$(mktemp -d)
MSGS=100000
LOAD="$NATS bench pub orders.created --clients 4 --msgs $MSGS --size 128B --no-progress -s nats://{host}:{port} >/dev/null"

# server NAME [FLAG...]: a nats-server on 127.0.0.1 serving pprof
# (--profile), its log in WORK/NAME.log, and a subscriber on the load's
# subject; sets PORT and PPROF.
server() {
	local name=$1
	shift
	PORT=$(free_port) PPROF=$(free_port)
	bg "$NATS_SERVER" -a 127.0.0.1 -p "$PORT" --profile "$PPROF" -l "$WORK/$name.log" "$@"
	wait_port "$PORT"
	wait_port "$PPROF"
	bg "$NATS" bench sub orders.created --msgs 1000000000 --no-progress -s "nats://127.0.0.1:$PORT" >"$WORK/$name-sub.out" 2>&1
}
server bad -DV
BAD=$PORT BAD_PPROF=$PPROF
server good
GOOD=$PORT GOOD_PPROF=$PPROF
sleep 1
# run takes no --load beside --load-cmd: the address goes in by hand.
load_to() {
	local l=${LOAD//\{host\}/127.0.0.1}
	echo "${l//\{port\}/$1}"
}

wait_idle
"$PD" run --target "http://127.0.0.1:$BAD_PPROF" --load-cmd "$(load_to "$BAD")" --units "$MSGS" --unit message \
	--warmup 5s -d 20s -o "$WORK/run" >"$WORK/run.txt"
grep -E '^ *load:|^ *[0-9]+\. \[' "$WORK/run.txt" >&2 || true
keep_bundle "$WORK/run" "$HERE/bad"
echo "trace log after the recording: $(wc -lc <"$WORK/bad.log") (lines, bytes)" >&2
pd_verify_cmd "$BAD" "$GOOD" "$HERE" "$MSGS" message "$LOAD" -d 10s --rounds 6 --warmup 2s
"$PD" run --target "http://127.0.0.1:$GOOD_PPROF" --load-cmd "$(load_to "$GOOD")" --units "$MSGS" --unit message \
	--warmup 5s -d 20s -o "$WORK/run-fixed" >"$WORK/run-fixed.txt"
grep -E '^ *load:|^ *[0-9]+\. \[' "$WORK/run-fixed.txt" >&2 || true
keep_bundle "$WORK/run-fixed" "$HERE/fixed"
set_measured "$HERE" cpu_per_unit
echo "logs: bad $(wc -c <"$WORK/bad.log") bytes, good $(wc -l <"$WORK/good.log") lines; slow consumers: $(grep -c 'Slow Consumer' "$WORK/bad.log" "$WORK/good.log" | tr '\n' ' ')" >&2
rm -rf "$WORK"
