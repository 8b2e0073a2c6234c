#!/usr/bin/env bash
# send-points.sh URL POINTS: POSTs POINTS points in InfluxDB line protocol to
# URL with ab (8 keep-alive connections), as many points per request as the
# URL's batch= parameter says (the rest of the URL is where they go). Both
# sides of the verify send the same points; only the batching differs.
set -euo pipefail
url=$1 points=$2
batch=$(sed -n 's/.*[?&]batch=\([0-9]*\).*/\1/p' <<<"$url")
target=$(sed 's/[?&]batch=[0-9]*//' <<<"$url")
body=${BODY_DIR:-/tmp}/points-$batch.txt
if [ ! -s "$body" ]; then
	python3 - "$batch" >"$body.tmp" <<'PY'
import sys, time
n = int(sys.argv[1])
ts = int(time.time()) * 10**9
for i in range(n):
    print(f"http_requests,host=web-{i % 40},path=/api/v{i % 7},code={200 + i % 3} count={i % 97}i,latency_ms={i % 13}.25 {ts}")
PY
	mv "$body.tmp" "$body"
fi
requests=$((points / batch))
exec ab -q -k -c $((requests < 8 ? requests : 8)) -n "$requests" -p "$body" -T 'text/plain' "$target" >/dev/null
