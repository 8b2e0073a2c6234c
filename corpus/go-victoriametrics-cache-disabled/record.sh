#!/usr/bin/env bash
# VictoriaMetrics 1.150.0 (go install from the module proxy) answering a
# dashboard's range query over 12 hours of 500 request-counter series,
# started with -search.disableCache (its docs advise it while backfilling
# history; here it stayed on afterwards), so every refresh recomputes the
# whole range. The fix measured: the flag removed (rollup result cache on).
source "$(dirname "$0")/../lib.sh"
HERE=$(cd "$(dirname "$0")" && pwd)
apt_need curl
GOTOOLCHAIN=auto go_install github.com/VictoriaMetrics/VictoriaMetrics/app/victoria-metrics@v1.150.0
VM=$GO_BIN
pd_build
WORK=$(mktemp -d)

# Making the history is CPU work too: all of it under the lock.
cpu_lock
END=$(( $(date +%s) / 3600 * 3600 - 3600 ))
START=$((END - 12 * 3600))
request_history "$START" "$END" import >"$WORK/data.txt"

# start_vm PORT DATADIR FLAGS...: a single-node VictoriaMetrics holding the history.
start_vm() {
	local port=$1 dir=$2
	shift 2
	bg "$VM" -httpListenAddr="127.0.0.1:$port" -storageDataPath="$dir" -retentionPeriod=100y -loggerLevel=ERROR "$@"
	wait_port "$port"
	curl -sf --data-binary @"$WORK/data.txt" "http://127.0.0.1:$port/api/v1/import/prometheus"
	curl -sf "http://127.0.0.1:$port/internal/force_flush"
}
BAD=$(free_port)
start_vm "$BAD" "$WORK/vm-bad" -search.disableCache
GOOD=$(free_port)
start_vm "$GOOD" "$WORK/vm-good"
rm "$WORK/data.txt"
QUERY="/api/v1/query_range?query=sum%20by%20(path,code)%20(rate(http_requests_total%5B5m%5D))&start=$((END - 6 * 3600))&end=$END&step=60"
sleep 2
curl -sf "http://127.0.0.1:$BAD$QUERY" | head -c 120 || true; echo

wait_idle
"$PD" run --target "http://127.0.0.1:$BAD" --load "http://127.0.0.1:$BAD$QUERY" \
	-c 8 --warmup 5s -d 20s -o "$WORK/run" >"$WORK/run.txt"
keep_bundle "$WORK/run" "$HERE/bad"
"$PD" verify --before "http://127.0.0.1:$BAD$QUERY" --after "http://127.0.0.1:$GOOD$QUERY" \
	-c 8 --rounds 6 -d 5s --out "$WORK/verify"
record_verify "$WORK/verify" "$HERE"
rm -rf "$WORK"
