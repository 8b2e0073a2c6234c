#!/usr/bin/env bash
# Maximum requests/s of `perfdoctor load` against wrk on the same minimal
# loopback Go server (load/internal/minserver) with the same connection
# count, alternating the two tools over several rounds so drift on a shared
# machine hits both. Prints each round, the median perfdoctor/wrk ratio and
# the load average. Needs wrk (Debian package wrk).
#
#   ROUNDS=5 SECONDS_PER_RUN=5 CONNS=32 ./scripts/loadbench.sh
#   MIN_RATIO=0.9 ./scripts/loadbench.sh   # exit 1 below that median ratio
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${ROUNDS:-5}
secs=${SECONDS_PER_RUN:-5}
conns=${CONNS:-32}

command -v wrk >/dev/null || { echo "loadbench: wrk is not installed (apt-get install wrk)" >&2; exit 1; }
tmp=$(mktemp -d)
srv_pid=
cleanup() {
	# A server ended by SIGTERM waits as 143: that must not become the
	# script's status under set -e.
	if [ -n "$srv_pid" ]; then
		kill "$srv_pid" 2>/dev/null || true
		wait "$srv_pid" 2>/dev/null || true
	fi
	rm -rf "$tmp"
}
trap cleanup EXIT
go build -o "$tmp/perfdoctor" ./cmd/perfdoctor
go build -o "$tmp/minserver" ./load/internal/minserver
"$tmp/minserver" >"$tmp/ready" &
srv_pid=$!
for _ in $(seq 50); do grep -q ready "$tmp/ready" 2>/dev/null && break; sleep 0.1; done
url=$(sed -n 's/^ready app=//p' "$tmp/ready")
[ -n "$url" ] || { echo "loadbench: the server did not start" >&2; exit 1; }

wrk_rps() { wrk -t1 -c"$conns" -d"${secs}s" "$url" | awk '/^Requests\/sec/ {print $2}'; }
pd_rps() {
	"$tmp/perfdoctor" load "$url" -c "$conns" -d "${secs}s" --format json 2>/dev/null |
		python3 -c 'import json,sys; print(round(json.load(sys.stdin)["throughput_rps"]))'
}

echo "loadbench: $url, $conns connections, ${secs}s per run, $rounds rounds, $(nproc) CPUs"
printf '%5s %12s %12s %7s\n' round wrk perfdoctor ratio
ratios=()
for r in $(seq "$rounds"); do
	if [ $((r % 2)) = 1 ]; then w=$(wrk_rps); p=$(pd_rps); else p=$(pd_rps); w=$(wrk_rps); fi
	ratio=$(python3 -c "print(f'{$p/$w:.3f}')")
	ratios+=("$ratio")
	printf '%5s %12.0f %12.0f %7s\n' "$r" "$w" "$p" "$ratio"
done
median=$(printf '%s\n' "${ratios[@]}" | sort -n | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}')
echo "median perfdoctor/wrk: $median (load average $(cut -d' ' -f1-3 /proc/loadavg))"
if [ -n "${MIN_RATIO:-}" ] && python3 -c "import sys; sys.exit(0 if $median >= $MIN_RATIO else 1)"; then :; elif [ -n "${MIN_RATIO:-}" ]; then
	echo "loadbench: median ratio $median below $MIN_RATIO" >&2
	exit 1
fi
