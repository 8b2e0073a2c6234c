#!/usr/bin/env bash
# Debian's nginx 1.22 (nginx-light) as a reverse proxy in front of a second
# nginx answering a small JSON document, with a plain `proxy_pass` to an
# upstream block: nginx's defaults speak HTTP/1.0 to the upstream with
# "Connection: close", so every proxied request opens a TCP connection to
# the backend and closes it. 32 keep-alive clients. The fix measured:
# `keepalive 32` in the upstream block, with `proxy_http_version 1.1` and an
# empty Connection header in the location (nginx's documented recipe).
# The recorded process is the proxy's master, as a user would name it; its
# two workers do the work.
source "$(dirname "$0")/../lib.sh"
apt_need nginx-light
scenario_init

UP=$(free_port)
json_upstream "$UP" "$W"

# proxy PORT UPSTREAM-EXTRA LOCATION-EXTRA: the proxy under test.
proxy() {
	cat >"$W/proxy-$1.conf" <<CONF
worker_processes auto;
error_log $W/proxy-$1-error.log;
events { worker_connections 4096; }
http {
  access_log off;
  upstream app {
    server 127.0.0.1:$UP;
    $2
  }
  server {
    listen 127.0.0.1:$1 backlog=4096;
    keepalive_requests 100000;
    location / {
      proxy_pass http://app;
      $3
    }
  }
}
CONF
	nginx_start "$W/proxy-$1.conf"
	wait_port "$1"
}
BAD=$(free_port)
proxy "$BAD" '' ''
BAD_PID=$BG_PID
FIX=$(free_port)
proxy "$FIX" 'keepalive 32;' 'proxy_http_version 1.1; proxy_set_header Connection "";'
URL=/api/items/42
curl -sf "http://127.0.0.1:$BAD$URL" >&2; echo >&2

wait_idle
pd_record --perf "$BAD_PID" "$HERE/bad" 20 --load "http://127.0.0.1:$BAD$URL" -c 32 --warmup 5s
pd_verify "http://127.0.0.1:$BAD$URL" "http://127.0.0.1:$FIX$URL" "$HERE" -c 32 -d 10s --rounds 6 --warmup 2s
set_measured "$HERE" throughput
drop_measured "$HERE" cpu_per_unit # verify reads the listening master, not the workers
