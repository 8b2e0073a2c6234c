#!/usr/bin/env bash
# Healthy: Debian's nginx 1.22 (nginx-light) with its usual settings
# (worker_processes auto, sendfile, keep-alive) serving a 3 KB static page
# to 64 keep-alive clients, saturating the machine's two cores with the
# load generator. The plausible change measured: open_file_cache (no open,
# fstat and close per request). The recorded process is the master, as a
# user would name it.
source "$(dirname "$0")/../lib.sh" # from corpus/<id>/, once moved there
apt_need nginx-light
scenario_init

mkdir -p "$W/www"
python3 - "$W/www/index.html" <<'PY'
import sys
rows = "".join(f"<tr><td>service-{i:02d}</td><td>operational</td><td>{99.9 + i % 10 / 100:.2f}%</td></tr>\n" for i in range(40))
open(sys.argv[1], "w").write(f"<!doctype html>\n<html><head><meta charset=\"utf-8\"><title>Status</title></head>\n<body><h1>Status</h1><table>\n{rows}</table></body></html>\n")
PY

# site PORT EXTRA: an nginx serving $W/www.
site() {
	nginx_site "$W" "$1" http='tcp_nopush on;' server="$2"
}
BAD=$(free_port)
site "$BAD" ''
BAD_PID=$BG_PID
ALT=$(free_port)
site "$ALT" 'open_file_cache max=1000 inactive=60s;'
curl -sf -o /dev/null -w "%{size_download} bytes\n" "http://127.0.0.1:$BAD/" >&2

wait_idle
pd_record --perf "$BAD_PID" "$HERE/bad" 20 --load "http://127.0.0.1:$BAD/" -c 64 --warmup 5s
pd_verify "http://127.0.0.1:$BAD/" "http://127.0.0.1:$ALT/" "$HERE" -c 64 -d 10s --rounds 6 --warmup 2s
set_measured "$HERE" throughput
drop_measured "$HERE" cpu_per_unit # verify reads the listening master, not the workers
