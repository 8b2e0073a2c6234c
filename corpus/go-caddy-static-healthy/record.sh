#!/usr/bin/env bash
# Healthy: Debian's caddy (2.6.2, Go 1.19) serving a small static page with
# file_server to 32 keep-alive clients, saturated: the CPU goes to HTTP
# parsing, the file server and the kernel's loopback TCP, each request doing
# its job once. The plausible change measured: GOGC=400 (more heap for
# fewer collections), which should give little.
source "$(dirname "$0")/../lib.sh"
HERE=$(cd "$(dirname "$0")" && pwd)
apt_need caddy
pd_build
WORK=$(mktemp -d)
mkdir -p "$WORK/site"
python3 - >"$WORK/site/index.html" <<'PY'
print("<!doctype html><html><head><meta charset=utf-8><title>Status</title></head><body><h1>Service status</h1><ul>")
for i in range(40):
    print(f"<li>component-{i}: operational, p99 {10 + i % 7} ms, last incident {i % 30 + 1} days ago</li>")
print("</ul></body></html>")
PY

# start_caddy PORT ADMIN: caddy serving the page.
start_caddy() {
	printf '{\n\tadmin 127.0.0.1:%s\n\tauto_https off\n}\nhttp://127.0.0.1:%s {\n\troot * %s\n\tfile_server\n}\n' \
		"$2" "$1" "$WORK/site" >"$WORK/Caddyfile.$1"
	HOME=$WORK XDG_DATA_HOME=$WORK/data XDG_CONFIG_HOME=$WORK/config \
		bg caddy run --config "$WORK/Caddyfile.$1" --adapter caddyfile 2>"$WORK/caddy.$1.log"
	wait_port "$1"
}
BASE=$(free_port) BASE_ADMIN=$(free_port)
start_caddy "$BASE" "$BASE_ADMIN"
TUNED=$(free_port) TUNED_ADMIN=$(free_port)
GOGC=400 start_caddy "$TUNED" "$TUNED_ADMIN"

cpu_lock
wait_idle
"$PD" run --target "http://127.0.0.1:$BASE_ADMIN" --load "http://127.0.0.1:$BASE/" \
	-c 32 --warmup 5s -d 20s -o "$WORK/run" >"$WORK/run.txt"
keep_bundle "$WORK/run" "$HERE/bad"
"$PD" verify --before "http://127.0.0.1:$BASE/" --after "http://127.0.0.1:$TUNED/" \
	-c 32 --rounds 6 -d 6s --out "$WORK/verify" || true
record_verify "$WORK/verify" "$HERE"
rm -rf "$WORK"
