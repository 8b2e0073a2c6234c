#!/usr/bin/env bash
# Healthy: VictoriaMetrics 1.150.0 (go install from the module proxy)
# ingesting InfluxDB line protocol in batches of 1000 points from 8
# keep-alive clients, saturated: the CPU goes to parsing the points and
# adding them to storage. The plausible change measured: GOGC=100 in the
# environment (VictoriaMetrics runs at GOGC=30 unless told otherwise,
# trading CPU for memory on purpose).
source "$(dirname "$0")/../lib.sh"
HERE=$(cd "$(dirname "$0")" && pwd)
GOTOOLCHAIN=auto go_install github.com/VictoriaMetrics/VictoriaMetrics/app/victoria-metrics@v1.150.0
VM=$GO_BIN
pd_build
WORK=$(mktemp -d)
python3 - >"$WORK/batch.txt" <<'PY'
import time
ts = int(time.time()) * 10**9
for i in range(1000):
    print(f"http_requests,host=web-{i % 40},path=/api/v{i % 7},code={200 + i % 3} count={i % 97}i,latency_ms={i % 13}.25 {ts}")
PY

start_vm() {
	PORT=$(free_port)
	bg "$VM" -httpListenAddr="127.0.0.1:$PORT" -storageDataPath="$WORK/$1" -loggerLevel=ERROR
	wait_port "$PORT"
}
start_vm base
BASE=$PORT
GOGC=100 start_vm tuned
TUNED=$PORT

cpu_lock
wait_idle
"$PD" run --target "http://127.0.0.1:$BASE" --load "http://127.0.0.1:$BASE/write" -X POST --body "$WORK/batch.txt" \
	-c 8 --warmup 5s -d 20s -o "$WORK/run" >"$WORK/run.txt"
keep_bundle "$WORK/run" "$HERE/bad"
"$PD" verify --before "http://127.0.0.1:$BASE/write" --after "http://127.0.0.1:$TUNED/write" -X POST --body "$WORK/batch.txt" \
	-c 8 --rounds 6 -d 6s --out "$WORK/verify" || true
record_verify "$WORK/verify" "$HERE"
rm -rf "$WORK"
