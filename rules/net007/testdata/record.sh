#!/usr/bin/env bash
# Re-records NET007's ingest cases from the service in ingest/: the same
# samples sent one per POST (one-per-post) and 1000 per POST (batched), 16
# keep-alive connections, recorded with perfdoctor run. Bundles are cut down
# to what the diagnosis of these cases reads. Takes the machine's CPU lock.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
work=$(mktemp -d)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	rm -rf "$work"
}
trap cleanup EXIT
(cd "$root" && go build -o "$work/perfdoctor" ./cmd/perfdoctor)
(cd "$here/ingest" && go build -o "$work/ingest" .)

# 1000 samples over 200 series; one-per-post sends the first line alone.
for i in $(seq 0 999); do
	printf 'http_requests_total{host="web-%d",code="%d"} %d\n' $((i % 40)) $((200 + i % 5)) $((i % 97))
done >"$work/batch.txt"
head -1 "$work/batch.txt" >"$work/one.txt"

exec 9>"${PERFDOCTOR_CPU_LOCK:-/tmp/perfdoctor-cpu.lock}"
flock 9
port=18431
for c in one-per-post:one.txt batched:batch.txt; do
	name=${c%%:*} body=${c#*:}
	"$work/ingest" -addr "127.0.0.1:$port" &
	pids+=($!)
	for _ in $(seq 50); do curl -s -o /dev/null "http://127.0.0.1:$port/debug/pprof/" && break; sleep 0.1; done
	"$work/perfdoctor" run --target "http://127.0.0.1:$port" --load "http://127.0.0.1:$port/ingest" -X POST \
		--body "$work/$body" -c 16 --warmup 5s -d 15s -o "$work/$name" >"$work/$name.txt"
	kill "${pids[-1]}"
	wait "${pids[-1]}" 2>/dev/null || true
	grep -E '^ *load:|^ *[0-9]+\. \[' "$work/$name.txt" || true
	mkdir -p "$here/$name"
	find "$here/$name" -mindepth 1 ! -name want.txt -delete
	for f in manifest.json cpu.pb.gz load.json system-0.json system-1.json metrics-0.json metrics-1.json; do
		[ -e "$work/$name/bundle/$f" ] && cp "$work/$name/bundle/$f" "$here/$name/"
	done
	port=$((port + 1))
done
