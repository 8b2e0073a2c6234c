#!/usr/bin/env bash
# Re-records NET007's redis cases: Debian's redis-server (apt install
# redis-server redis-tools) filled with 100,000 keys of 100 bytes, then read
# one GET per round trip (redis-get-per-key) or with 16 commands pipelined
# per round trip (redis-pipelined), recorded through perf with perfdoctor
# run. Takes the machine's CPU lock.
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

exec 9>"${PERFDOCTOR_CPU_LOCK:-/tmp/perfdoctor-cpu.lock}"
flock 9
port=18441
for name in redis-get-per-key redis-pipelined; do
	mkdir -p "$work/$name-data"
	printf 'bind 127.0.0.1\nport %s\ndir %s\nsave ""\n' "$port" "$work/$name-data" >"$work/$name-data/redis.conf"
	redis-server "$work/$name-data/redis.conf" >/dev/null &
	pid=$!
	for _ in $(seq 50); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.1; done
	redis-benchmark -p "$port" -t set -n 300000 -r 100000 -d 100 -c 16 -q >/dev/null
	if [ "$name" = redis-get-per-key ]; then
		load="redis-benchmark -h 127.0.0.1 -p $port -c 32 -n 100000 -r 100000 -q GET key:__rand_int__" units=100000 unit=key
	else
		load="redis-benchmark -h 127.0.0.1 -p $port -t set,get -n 200000 -c 50 -P 16 -d 100 -r 100000 -q" units=400000 unit=command
	fi
	"$work/perfdoctor" run --perf "$pid" -d 15s --warmup 5s -o "$work/$name" \
		--load-cmd "$load" --units "$units" --unit "$unit" >"$work/$name.txt"
	kill "$pid"
	wait "$pid" 2>/dev/null || true
	pid=
	grep -E '^ *load:|^ *[0-9]+\. \[' "$work/$name.txt" || true
	mkdir -p "$here/$name"
	find "$here/$name" -mindepth 1 ! -name want.txt -delete
	cp "$work/$name/bundle/"* "$here/$name/"
	port=$((port + 1))
done
