#!/usr/bin/env bash
# etcd 3.7.3 (built from the module proxy with the current Go) holding
# 300,000 keys (a live heap of about 150 MiB), started with GOMEMLIMIT=128MiB
# in its environment: a limit set when the store was smaller, now below the
# live heap, so the collector runs back to back. The load is etcd's own
# benchmark tool over gRPC: serializable reads of one key by 32 clients. The
# fix measured: no GOMEMLIMIT (or one above the live heap).
source "$(dirname "$0")/../lib.sh"
HERE=$(cd "$(dirname "$0")" && pwd)
go_install go.etcd.io/etcd/server/v3@v3.7.3
ETCD=$GO_BIN
go_install go.etcd.io/etcd/v3/tools/benchmark@v3.6.8
BENCH=$GO_BIN
pd_build
WORK=$(mktemp -d)
KEYS=300000 RANGES=20000

# start_etcd NAME: a single-member etcd serving pprof on its client URL; sets PORT.
start_etcd() {
	local peer
	PORT=$(free_port) peer=$(free_port)
	bg "$ETCD" --name "$1" --data-dir "$WORK/$1" --enable-pprof --quota-backend-bytes=8589934592 --log-level=error \
		--listen-client-urls "http://127.0.0.1:$PORT" --advertise-client-urls "http://127.0.0.1:$PORT" \
		--listen-peer-urls "http://127.0.0.1:$peer" --initial-advertise-peer-urls "http://127.0.0.1:$peer" \
		--initial-cluster "$1=http://127.0.0.1:$peer" 2>"$WORK/$1.log"
	wait_port "$PORT"
}
GOMEMLIMIT=128MiB start_etcd bad
BAD=$PORT
start_etcd good
GOOD=$PORT
LOAD="$BENCH --endpoints {addr} --clients 32 --conns 4 range /registry/pods/ns7/pod-00000007 --consistency s --total $RANGES >/dev/null"

cpu_lock
etcd_preload "http://127.0.0.1:$BAD" "$KEYS" &
preload=$!
etcd_preload "http://127.0.0.1:$GOOD" "$KEYS"
wait "$preload"
for port in "$BAD" "$GOOD"; do
	curl -sf "http://127.0.0.1:$port/debug/pprof/heap?debug=1&gc=1" | grep -E '^# HeapAlloc' | sed "s/^/$port: /"
done
wait_idle
# run takes no --load beside --load-cmd (it says it does): the address goes in by hand.
"$PD" run --target "http://127.0.0.1:$BAD" --load-cmd "${LOAD//\{addr\}/127.0.0.1:$BAD}" --units "$RANGES" --unit range \
	--warmup 5s -d 20s -o "$WORK/run" >"$WORK/run.txt"
keep_bundle "$WORK/run" "$HERE/bad"
"$PD" verify --before "tcp://127.0.0.1:$BAD" --after "tcp://127.0.0.1:$GOOD" --load-cmd "$LOAD" --units "$RANGES" --unit range \
	--rounds 6 -d 6s --out "$WORK/verify"
record_verify "$WORK/verify" "$HERE"
rm -rf "$WORK"
