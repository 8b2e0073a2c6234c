#!/usr/bin/env bash
# Debian's prometheus-pushgateway (1.5.1, Go 1.19) holding 500 groups of 40
# series, pushed to by 8 clients. Every push checks the consistency of the
# whole store: it gathers every group's metrics, not only the pushed one.
# The fix measured: --push.disable-consistency-check.
source "$(dirname "$0")/../lib.sh"
HERE=$(cd "$(dirname "$0")" && pwd)
apt_need prometheus-pushgateway curl
pd_build
WORK=$(mktemp -d)
GROUPS_N=500 SERIES=40

# group_body N: one batch job's metrics, as its push would send them.
group_body() {
	python3 - "$1" "$SERIES" <<'PY'
import sys
g, n = int(sys.argv[1]), int(sys.argv[2])
print("# TYPE batch_records_processed gauge")
for i in range(n):
    print(f'batch_records_processed{{stage="s{i}",shard="{g % 7}"}} {g * 1000 + i}')
print("# TYPE batch_last_success_timestamp_seconds gauge")
print(f"batch_last_success_timestamp_seconds {1700000000 + g}")
PY
}

# start_pushgateway PORT FLAGS...: an in-memory pushgateway holding the store.
start_pushgateway() {
	local port=$1
	shift
	bg prometheus-pushgateway --web.listen-address="127.0.0.1:$port" --persistence.file= "$@"
	wait_port "$port"
	for ((g = 0; g < GROUPS_N; g++)); do
		group_body "$g" >"$WORK/g.txt"
		curl -sf -X PUT --data-binary @"$WORK/g.txt" "http://127.0.0.1:$port/metrics/job/batch$((g % 50))/instance/i$g"
	done
}

# Filling the stores is CPU work too (each fill push checks the store so far).
cpu_lock
group_body 9999 >"$WORK/push.txt"
PUSH=/metrics/job/load/instance/worker
BAD=$(free_port)
start_pushgateway "$BAD"
GOOD=$(free_port)
start_pushgateway "$GOOD" --push.disable-consistency-check

wait_idle
"$PD" run --target "http://127.0.0.1:$BAD" --load "http://127.0.0.1:$BAD$PUSH" -X PUT --body "$WORK/push.txt" \
	-c 8 --warmup 5s -d 20s -o "$WORK/run" >"$WORK/run.txt"
keep_bundle "$WORK/run" "$HERE/bad"
"$PD" verify --before "http://127.0.0.1:$BAD$PUSH" --after "http://127.0.0.1:$GOOD$PUSH" -X PUT --body "$WORK/push.txt" \
	-c 8 --rounds 6 -d 5s --out "$WORK/verify"
record_verify "$WORK/verify" "$HERE"
rm -rf "$WORK"
