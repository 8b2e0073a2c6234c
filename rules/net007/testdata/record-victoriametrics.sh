#!/usr/bin/env bash
# Re-records NET007's VictoriaMetrics cases: VictoriaMetrics 1.150.0 (go
# install from the module proxy) ingesting InfluxDB line protocol on /write,
# one line per POST on 16 connections (victoriametrics-one-line-per-post) and
# 1000 lines per POST on 8 (victoriametrics-batched), recorded with
# perfdoctor run. Bundles are cut down to what these cases read. Takes the
# machine's CPU lock for the recordings.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
work=$(mktemp -d)
pid=
cleanup() {
	[ -n "$pid" ] && kill "$pid" 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT
(cd "$root" && go build -o "$work/perfdoctor" ./cmd/perfdoctor)
GOTOOLCHAIN=auto GOBIN="$work" go install github.com/VictoriaMetrics/VictoriaMetrics/app/victoria-metrics@v1.150.0

lines() {
	python3 - "$1" <<'PY'
import sys, time
n = int(sys.argv[1]); ts = int(time.time()) * 10**9
for i in range(n):
    print(f"http_requests,host=web-{i % 40},path=/api/v{i % 7},code={200 + i % 3} count={i % 97}i,latency_ms={i % 13}.25 {ts}")
PY
}
lines 1 >"$work/one.txt"
lines 1000 >"$work/batch.txt"

exec 9>"${PERFDOCTOR_CPU_LOCK:-/tmp/perfdoctor-cpu.lock}"
flock 9
port=18451
for c in victoriametrics-one-line-per-post:one.txt:16 victoriametrics-batched:batch.txt:8; do
	IFS=: read -r name body conns <<<"$c"
	"$work/victoria-metrics" -httpListenAddr="127.0.0.1:$port" -storageDataPath="$work/$name-data" -loggerLevel=ERROR &
	pid=$!
	for _ in $(seq 100); do curl -s -o /dev/null "http://127.0.0.1:$port/health" && break; sleep 0.1; done
	"$work/perfdoctor" run --target "http://127.0.0.1:$port" --load "http://127.0.0.1:$port/write" -X POST \
		--body "$work/$body" -c "$conns" --warmup 5s -d 15s -o "$work/$name" >"$work/$name.txt"
	kill "$pid"
	wait "$pid" 2>/dev/null || true
	pid=
	grep -E '^ *load:|^ *[0-9]+\. \[' "$work/$name.txt" || true
	mkdir -p "$here/$name"
	find "$here/$name" -mindepth 1 ! -name want.txt -delete
	for f in manifest.json cpu.pb.gz load.json system-0.json system-1.json metrics-0.json metrics-1.json; do
		[ -e "$work/$name/bundle/$f" ] && cp "$work/$name/bundle/$f" "$here/$name/"
	done
	port=$((port + 1))
done
