#!/usr/bin/env bash
# Healthy, and nearly idle: Debian's etcd (3.4.23, Go 1.19) taking 200 puts
# a second (a small cluster's leases and config updates) from etcd's own
# benchmark tool: a few percent of a core, each put's time spent waiting for
# its WAL fsync, the in-memory raft log growing toward the next snapshot
# (--snapshot-count) as designed. The plausible change measured: GOGC=400.
source "$(dirname "$0")/../lib.sh"
HERE=$(cd "$(dirname "$0")" && pwd)
apt_need etcd-server
go_install go.etcd.io/etcd/v3/tools/benchmark@v3.6.8
BENCH=$GO_BIN
pd_build
WORK=$(mktemp -d)
PUTS=1000

# start_etcd NAME: a single-member etcd serving pprof on its client URL; sets PORT.
start_etcd() {
	local peer
	PORT=$(free_port) peer=$(free_port)
	bg etcd --name "$1" --data-dir "$WORK/$1" --enable-pprof --log-level=error \
		--listen-client-urls "http://127.0.0.1:$PORT" --advertise-client-urls "http://127.0.0.1:$PORT" \
		--listen-peer-urls "http://127.0.0.1:$peer" --initial-advertise-peer-urls "http://127.0.0.1:$peer" \
		--initial-cluster "$1=http://127.0.0.1:$peer" 2>"$WORK/$1.log"
	wait_port "$PORT"
}
start_etcd base
BASE=$PORT
GOGC=400 start_etcd tuned
TUNED=$PORT
# 1000 puts at 200/s over 8 clients, five seconds a run, over a space of 2000 keys.
LOAD="$BENCH --endpoints {addr} --clients 8 --conns 2 put --rate 200 --total $PUTS --key-size 32 --key-space-size 2000 --val-size 256 >/dev/null"

cpu_lock
wait_idle
# run takes no --load beside --load-cmd (it says it does): the address goes in by hand.
"$PD" run --target "http://127.0.0.1:$BASE" --load-cmd "${LOAD//\{addr\}/127.0.0.1:$BASE}" --units "$PUTS" --unit put \
	--warmup 5s -d 30s -o "$WORK/run" >"$WORK/run.txt"
keep_bundle "$WORK/run" "$HERE/bad"
"$PD" verify --before "tcp://127.0.0.1:$BASE" --after "tcp://127.0.0.1:$TUNED" --load-cmd "$LOAD" --units "$PUTS" --unit put \
	--rounds 6 -d 10s --out "$WORK/verify" || true
record_verify "$WORK/verify" "$HERE"
rm -rf "$WORK"
