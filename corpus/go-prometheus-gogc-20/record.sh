#!/usr/bin/env bash
# Debian's prometheus (2.42, Go 1.19) answering dashboard range queries over
# 12 hours of 500 request-counter series, started with GOGC=20 in its
# environment (someone trading CPU for a smaller heap). The fix measured:
# the default GOGC (unset).
source "$(dirname "$0")/../lib.sh"
HERE=$(cd "$(dirname "$0")" && pwd)
apt_need prometheus
pd_build
WORK=$(mktemp -d)

# 12 hours of http_requests_total, ending an hour ago, 30 s apart, for 20
# instances x 5 paths x 5 codes, written as blocks by promtool's backfill.
# Making the history is CPU work too: all of it under the lock.
cpu_lock
END=$(( $(date +%s) / 3600 * 3600 - 3600 ))
START=$((END - 12 * 3600))
request_history "$START" "$END" openmetrics >"$WORK/data.om"
mkdir -p "$WORK/data"
promtool tsdb create-blocks-from openmetrics "$WORK/data.om" "$WORK/data" >/dev/null
rm "$WORK/data.om"
cp -a "$WORK/data" "$WORK/data-fixed"
printf 'global:\n  scrape_interval: 1m\n' >"$WORK/prometheus.yml"

# start_prometheus PORT DATADIR: a Prometheus with no scrape targets over the blocks.
start_prometheus() {
	bg prometheus --config.file="$WORK/prometheus.yml" --storage.tsdb.path="$2" --storage.tsdb.retention.time=10y \
		--web.listen-address="127.0.0.1:$1" --log.level=error 2>/dev/null
	wait_port "$1"
}
BAD=$(free_port)
GOGC=20 start_prometheus "$BAD" "$WORK/data"
GOOD=$(free_port)
start_prometheus "$GOOD" "$WORK/data-fixed"
# A dashboard panel: the last three hours of the request rate by path and code.
QUERY="/api/v1/query_range?query=sum%20by%20(path,code)%20(rate(http_requests_total%5B5m%5D))&start=$((END - 3 * 3600))&end=$END&step=60"
for port in "$BAD" "$GOOD"; do
	for _ in $(seq 20); do curl -sf -o /dev/null "http://127.0.0.1:$port$QUERY"; done
done

wait_idle
"$PD" run --target "http://127.0.0.1:$BAD" --load "http://127.0.0.1:$BAD$QUERY" \
	-c 8 --warmup 5s -d 20s -o "$WORK/run" >"$WORK/run.txt"
keep_bundle "$WORK/run" "$HERE/bad"
"$PD" verify --before "http://127.0.0.1:$BAD$QUERY" --after "http://127.0.0.1:$GOOD$QUERY" \
	-c 8 --rounds 6 -d 5s --out "$WORK/verify"
record_verify "$WORK/verify" "$HERE"
rm -rf "$WORK"
