#!/usr/bin/env bash
# Debian's nginx 1.22 (nginx-light, built --with-debug) serving a small
# static page, left with `error_log ... debug` after an investigation:
# every request writes about 180 debug lines (connection, parsing, headers,
# each filter, the send) to the error log. 32 keep-alive clients. The fix
# measured: the default level (error). The recorded process is the master,
# as a user would name it.
source "$(dirname "$0")/../lib.sh" # from corpus/<id>/, once moved there
apt_need nginx-light
scenario_init

mkdir -p "$W/www"
cat >"$W/www/index.html" <<'HTML'
<!doctype html>
<html><head><meta charset="utf-8"><title>Status</title></head>
<body><h1>All systems operational</h1><p>Last checked a minute ago.</p></body></html>
HTML

# site PORT LEVEL: an nginx serving $W/www with its error log at LEVEL.
site() {
	rm -f "$W/site-$1-error.log"
	nginx_site "$W" "$1" level="$2" keepalive
}
BAD=$(free_port)
site "$BAD" debug
BAD_PID=$BG_PID
FIX=$(free_port)
site "$FIX" error
curl -sf -o /dev/null "http://127.0.0.1:$BAD/"
echo "debug lines for one request: $(grep -c . "$W/site-$BAD-error.log")" >&2

wait_idle
pd_record --perf "$BAD_PID" "$HERE/bad" 20 --load "http://127.0.0.1:$BAD/" -c 32 --warmup 5s
pd_verify "http://127.0.0.1:$BAD/" "http://127.0.0.1:$FIX/" "$HERE" -c 32 -d 10s --rounds 6 --warmup 2s
set_measured "$HERE" throughput
drop_measured "$HERE" cpu_per_unit # verify reads the listening master, not the workers
# the debug log grows by about 100 MB a minute under this load
rm -f "$W"/site-*-error.log
