#!/usr/bin/env bash
# Healthy: Debian's etcd (3.4.23, Go 1.19) with 10,000 keys serving
# serializable reads of single keys to 32 gRPC clients of etcd's own
# benchmark tool, saturated: the CPU goes to gRPC, the MVCC index and bbolt
# reads, once per request. The plausible change measured: GOGC=400.
source "$(dirname "$0")/../lib.sh"
HERE=$(cd "$(dirname "$0")" && pwd)
apt_need etcd-server
go_install go.etcd.io/etcd/v3/tools/benchmark@v3.6.8
BENCH=$GO_BIN
pd_build
WORK=$(mktemp -d)
KEYS=10000 RANGES=20000

etcd_start base "$WORK"
BASE=$PORT
GOGC=400 etcd_start tuned "$WORK"
TUNED=$PORT
etcd_preload "http://127.0.0.1:$BASE" "$KEYS" 512
etcd_preload "http://127.0.0.1:$TUNED" "$KEYS" 512
LOAD="$BENCH --endpoints {addr} --clients 32 --conns 4 range /registry/pods/ns42/pod-00004242 --consistency s --total $RANGES >/dev/null"

cpu_lock
wait_idle
# run takes no --load beside --load-cmd (it says it does): the address goes in by hand.
"$PD" run --target "http://127.0.0.1:$BASE" --load-cmd "${LOAD//\{addr\}/127.0.0.1:$BASE}" --units "$RANGES" --unit range \
	--warmup 5s -d 20s -o "$WORK/run" >"$WORK/run.txt"
keep_bundle "$WORK/run" "$HERE/bad"
"$PD" verify --before "tcp://127.0.0.1:$BASE" --after "tcp://127.0.0.1:$TUNED" --load-cmd "$LOAD" --units "$RANGES" --unit range \
	--rounds 6 -d 6s --out "$WORK/verify" || true
record_verify "$WORK/verify" "$HERE"
rm -rf "$WORK"
