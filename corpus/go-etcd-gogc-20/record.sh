#!/usr/bin/env bash
# Debian's etcd (3.4.23, Go 1.19) with 10,000 keys serving serializable
# reads of single keys to 32 gRPC clients of etcd's own benchmark tool (the
# load of go-etcd-range-healthy), started with GOGC=20 in its environment
# (someone trading CPU for a smaller heap). The fix measured: the default
# GOGC (unset), whose side is recorded too (fixed/).
source "$(dirname "$0")/../lib.sh"
HERE=$(cd "$(dirname "$0")" && pwd)
apt_need etcd-server
go_install go.etcd.io/etcd/v3/tools/benchmark@v3.6.8
BENCH=$GO_BIN
# Building perfdoctor, the preload and the start-ups are CPU work too: all under the lock.
cpu_lock
pd_build
WORK=$(mktemp -d)
KEYS=10000 RANGES=20000


GOGC=20 etcd_start bad "$WORK"
BAD=$PORT
etcd_start good "$WORK"
GOOD=$PORT
etcd_preload "http://127.0.0.1:$BAD" "$KEYS" 512
etcd_preload "http://127.0.0.1:$GOOD" "$KEYS" 512
LOAD="$BENCH --endpoints {addr} --clients 32 --conns 4 range /registry/pods/ns42/pod-00004242 --consistency s --total $RANGES >/dev/null"
for port in "$BAD" "$GOOD"; do
	curl -sf "http://127.0.0.1:$port/debug/pprof/heap?debug=1&gc=1" | grep -E '^# (HeapAlloc|NumGC)' | sed "s/^/$port: /" >&2
done

wait_idle
# run takes no --load beside --load-cmd (it says it does): the address goes in by hand.
"$PD" run --target "http://127.0.0.1:$BAD" --load-cmd "${LOAD//\{addr\}/127.0.0.1:$BAD}" --units "$RANGES" --unit range \
	--warmup 5s -d 20s -o "$WORK/run" >"$WORK/run.txt"
grep -E '^ *load:|^ *[0-9]+\. \[' "$WORK/run.txt" >&2 || true
keep_bundle "$WORK/run" "$HERE/bad"
"$PD" verify --before "tcp://127.0.0.1:$BAD" --after "tcp://127.0.0.1:$GOOD" --load-cmd "$LOAD" --units "$RANGES" --unit range \
	--rounds 6 -d 6s --out "$WORK/verify" >&2 || [ $? -eq 4 ]
record_verify "$WORK/verify" "$HERE"
# The fixed side recorded the same way: what the collector costs at the default GOGC.
"$PD" run --target "http://127.0.0.1:$GOOD" --load-cmd "${LOAD//\{addr\}/127.0.0.1:$GOOD}" --units "$RANGES" --unit range \
	--warmup 5s -d 20s -o "$WORK/run-fixed" >"$WORK/run-fixed.txt"
grep -E '^ *load:|^ *[0-9]+\. \[' "$WORK/run-fixed.txt" >&2 || true
keep_bundle "$WORK/run-fixed" "$HERE/fixed"
for port in "$BAD" "$GOOD"; do
	curl -sf "http://127.0.0.1:$port/debug/pprof/heap?debug=1" | grep -E '^# (HeapAlloc|NumGC|HeapSys)' | sed "s/^/$port: /" >&2
done
rm -rf "$WORK"
