#!/usr/bin/env bash
# VictoriaMetrics 1.150.0 (go install from the module proxy) ingesting
# InfluxDB line protocol from clients that POST every point on its own: one
# point per HTTP request on 16 keep-alive connections. The write API takes
# batches; the fix measured: 1000 points per request (send-points.sh sends
# the same points both ways, verify counts points).
source "$(dirname "$0")/../lib.sh"
HERE=$(cd "$(dirname "$0")" && pwd)
apt_need apache2-utils
GOTOOLCHAIN=auto go_install github.com/VictoriaMetrics/VictoriaMetrics/app/victoria-metrics@v1.150.0
VM=$GO_BIN
pd_build
WORK=$(mktemp -d)
export BODY_DIR=$WORK
POINTS=50000

start_vm() {
	PORT=$(free_port)
	bg "$VM" -httpListenAddr="127.0.0.1:$PORT" -storageDataPath="$WORK/$1" -loggerLevel=ERROR
	wait_port "$PORT"
}
start_vm bad
BAD=$PORT
start_vm good
GOOD=$PORT
# The points both sides send, made once (same timestamp, 280 series).
"$HERE/send-points.sh" "http://127.0.0.1:$BAD/write?batch=1" 1
"$HERE/send-points.sh" "http://127.0.0.1:$GOOD/write?batch=1000" 1000

cpu_lock
wait_idle
"$PD" run --target "http://127.0.0.1:$BAD" --load "http://127.0.0.1:$BAD/write" -X POST --body "$WORK/points-1.txt" \
	-c 16 --warmup 5s -d 20s -o "$WORK/run" >"$WORK/run.txt"
keep_bundle "$WORK/run" "$HERE/bad"
"$PD" verify --before "http://127.0.0.1:$BAD/write?batch=1" --after "http://127.0.0.1:$GOOD/write?batch=1000" \
	--load-cmd "$HERE/send-points.sh '{url}' $POINTS" --units "$POINTS" --unit point \
	--rounds 6 -d 6s --out "$WORK/verify"
record_verify "$WORK/verify" "$HERE"
rm -rf "$WORK"
