#!/usr/bin/env bash
# Re-records NET007's cases: ./record.sh [ingest|victoriametrics|redis...]
# (all when none). Each records a bad and a good shape of the same server
# with perfdoctor run, and keeps the bundle cut down to what these cases
# read (their want.txt stay):
#   ingest           the service in ingest/ taking one 47-byte sample per
#                    POST (one-per-post) and 1000 per POST (batched), 16
#                    keep-alive connections
#   victoriametrics  VictoriaMetrics 1.150.0 (go install from the module
#                    proxy) taking InfluxDB line protocol on /write, one line
#                    per POST on 16 connections and 1000 per POST on 8
#   redis            Debian's redis-server (apt install redis-server
#                    redis-tools) with 100,000 keys of 100 bytes, one GET per
#                    round trip (32 connections) and 16 commands pipelined
#                    per round trip (50 connections), through perf
# Takes the machine's CPU lock for the recordings.
set -euo pipefail
groups=("$@")
[ ${#groups[@]} -gt 0 ] || groups=(ingest victoriametrics redis)
for g in "${groups[@]}"; do
	case $g in
	ingest | victoriametrics | redis) ;;
	*) echo "record.sh: unknown case group $g (ingest, victoriametrics, redis)" >&2; exit 2 ;;
	esac
done
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
work=$(mktemp -d)
pid=
cleanup() {
	if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; fi
	rm -rf "$work"
}
trap cleanup EXIT
(cd "$root" && go build -o "$work/perfdoctor" ./cmd/perfdoctor)
port=18431

# wait_for CMD...: until CMD succeeds (5 s at most).
wait_for() {
	for _ in $(seq 50); do "$@" >/dev/null 2>&1 && return; sleep 0.1; done
}

# finish NAME: stops the server, prints the findings and keeps the bundle.
finish() {
	kill "$pid"
	wait "$pid" 2>/dev/null || true
	pid=
	grep -E '^ *load:|^ *[0-9]+\. \[' "$work/$1.txt" || true
	mkdir -p "$here/$1"
	find "$here/$1" -mindepth 1 ! -name want.txt -delete
	for f in manifest.json cpu.pb.gz perf.pb.gz offcpu.pb.gz load.json system-0.json system-1.json metrics-0.json metrics-1.json; do
		if [ -e "$work/$1/bundle/$f" ]; then cp "$work/$1/bundle/$f" "$here/$1/"; fi
	done
	port=$((port + 1))
}

# http_case NAME SERVER-ARGS... -- RUN-ARGS...: starts the server (its
# arguments may use PORT), waits for its pprof, records it under load.
http_case() {
	local name=$1 args=() run=()
	shift
	while [ "$1" != -- ]; do args+=("${1//PORT/$port}"); shift; done
	shift
	for a in "$@"; do run+=("${a//PORT/$port}"); done
	"${args[@]}" &
	pid=$!
	wait_for curl -sf -o /dev/null "http://127.0.0.1:$port/debug/pprof/"
	"$work/perfdoctor" run --target "http://127.0.0.1:$port" --warmup 5s -d 15s -o "$work/$name" "${run[@]}" >"$work/$name.txt"
	finish "$name"
}

points() {
	python3 - "$1" <<'PY'
import sys, time
n = int(sys.argv[1]); ts = int(time.time()) * 10**9
for i in range(n):
    print(f"http_requests,host=web-{i % 40},path=/api/v{i % 7},code={200 + i % 3} count={i % 97}i,latency_ms={i % 13}.25 {ts}")
PY
}

record_ingest() {
	(cd "$here/ingest" && go build -o "$work/ingest" .)
	for i in $(seq 0 999); do
		printf 'http_requests_total{host="web-%d",code="%d"} %d\n' $((i % 40)) $((200 + i % 5)) $((i % 97))
	done >"$work/samples.txt"
	head -1 "$work/samples.txt" >"$work/sample.txt"
	for c in one-per-post:sample.txt batched:samples.txt; do
		http_case "${c%%:*}" "$work/ingest" -addr 127.0.0.1:PORT -- \
			--load http://127.0.0.1:PORT/ingest -X POST --body "$work/${c#*:}" -c 16
	done
}

record_victoriametrics() {
	GOTOOLCHAIN=auto GOBIN="$work" go install github.com/VictoriaMetrics/VictoriaMetrics/app/victoria-metrics@v1.150.0
	points 1 >"$work/line.txt"
	points 1000 >"$work/lines.txt"
	for c in victoriametrics-one-line-per-post:line.txt:16 victoriametrics-batched:lines.txt:8; do
		IFS=: read -r name body conns <<<"$c"
		http_case "$name" "$work/victoria-metrics" -httpListenAddr=127.0.0.1:PORT -storageDataPath="$work/$name-data" -loggerLevel=ERROR -- \
			--load http://127.0.0.1:PORT/write -X POST --body "$work/$body" -c "$conns"
	done
}

record_redis() {
	local name load units unit
	for name in redis-get-per-key redis-pipelined; do
		mkdir -p "$work/$name-data"
		printf 'bind 127.0.0.1\nport %s\ndir %s\nsave ""\n' "$port" "$work/$name-data" >"$work/$name-data/redis.conf"
		redis-server "$work/$name-data/redis.conf" >/dev/null &
		pid=$!
		wait_for redis-cli -p "$port" ping
		redis-benchmark -p "$port" -t set -n 300000 -r 100000 -d 100 -c 16 -q >/dev/null
		if [ "$name" = redis-get-per-key ]; then
			load="redis-benchmark -h 127.0.0.1 -p $port -c 32 -n 100000 -r 100000 -q GET key:__rand_int__" units=100000 unit=key
		else
			load="redis-benchmark -h 127.0.0.1 -p $port -t set,get -n 200000 -c 50 -P 16 -d 100 -r 100000 -q" units=400000 unit=command
		fi
		"$work/perfdoctor" run --perf "$pid" --warmup 5s -d 15s -o "$work/$name" \
			--load-cmd "$load" --units "$units" --unit "$unit" >"$work/$name.txt"
		finish "$name"
	done
}

exec 9>"${PERFDOCTOR_CPU_LOCK:-/tmp/perfdoctor-cpu.lock}"
flock 9
for g in "${groups[@]}"; do
	"record_$g"
done
