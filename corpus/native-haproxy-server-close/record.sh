#!/usr/bin/env bash
# Debian's HAProxy 2.6 in front of an nginx answering a small JSON
# document, with `option http-server-close` in its defaults (a setting many
# older configurations carry): the clients keep their connections alive,
# but HAProxy closes the server side after every response, so each request
# opens a new TCP connection to the backend. 32 keep-alive clients. The fix
# measured: the option removed (HAProxy's default, http-keep-alive with
# http-reuse safe).
source "$(dirname "$0")/../lib.sh"
apt_need haproxy nginx-light
scenario_init

UP=$(free_port)
json_upstream "$UP" "$W"

# haproxy_start PORT OPTION-LINE: the proxy under test, in the foreground.
haproxy_start() {
	cat >"$W/haproxy-$1.cfg" <<CONF
global
  maxconn 8000
defaults
  mode http
  timeout connect 5s
  timeout client 30s
  timeout server 30s
  $2
frontend web
  bind 127.0.0.1:$1
  default_backend app
backend app
  server app1 127.0.0.1:$UP maxconn 1000
CONF
	bg haproxy -db -f "$W/haproxy-$1.cfg"
	wait_port "$1"
}
BAD=$(free_port)
haproxy_start "$BAD" 'option http-server-close'
BAD_PID=$BG_PID
FIX=$(free_port)
haproxy_start "$FIX" ''
curl -sf "http://127.0.0.1:$BAD/item/42" >&2; echo >&2

wait_idle
pd_record --perf "$BAD_PID" "$HERE/bad" 20 --load "http://127.0.0.1:$BAD/item/42" -c 32 --warmup 5s
pd_verify "http://127.0.0.1:$BAD/item/42" "http://127.0.0.1:$FIX/item/42" "$HERE" \
	-c 32 -d 10s --rounds 6 --warmup 2s
set_measured "$HERE" throughput
