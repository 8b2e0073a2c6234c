#!/usr/bin/env bash
# Debian's Apache 2.4 (mpm_event) as a reverse proxy (mod_proxy_http) in
# front of a backend that takes 50 ms to answer (an nginx with echo_sleep:
# a report or search service), with its worker threads capped at 16
# (ServerLimit 1, ThreadsPerChild 16, MaxRequestWorkers 16: settings sized
# for a small machine and never revisited). 64 keep-alive clients: each
# proxied request holds a worker thread for the backend's 50 ms, so at most
# 16 are in flight and the rest queue while the CPUs idle. The fix
# measured: ServerLimit 4, ThreadsPerChild 64, MaxRequestWorkers 256.
# The recorded process is Apache's parent, as a user would name it; the
# worker threads live in its child.
source "$(dirname "$0")/../lib.sh" # from corpus/<id>/, once moved there
apt_need apache2 nginx-light libnginx-mod-http-echo
scenario_init

UP=$(free_port)
cat >"$W/backend.conf" <<CONF
load_module /usr/lib/nginx/modules/ngx_http_echo_module.so;
worker_processes 1;
error_log $W/backend-error.log;
events { worker_connections 4096; }
http {
  access_log off;
  server {
    listen 127.0.0.1:$UP backlog=4096;
    keepalive_requests 100000;
    location / { default_type text/plain; echo_sleep 0.05; echo "report ready"; }
  }
}
CONF
nginx_start "$W/backend.conf"
wait_port "$UP"

# apache PORT MPM-SETTINGS: the proxy under test, in the foreground.
apache() {
	mkdir -p "$W/run-$1"
	cat >"$W/apache-$1.conf" <<CONF
ServerRoot /etc/apache2
DefaultRuntimeDir $W/run-$1
PidFile $W/run-$1/apache2.pid
Mutex file:$W/run-$1 default
ServerName 127.0.0.1
Listen 127.0.0.1:$1
User nobody
Group nogroup
ErrorLog $W/apache-$1-error.log
LogLevel warn
LoadModule mpm_event_module /usr/lib/apache2/modules/mod_mpm_event.so
LoadModule authz_core_module /usr/lib/apache2/modules/mod_authz_core.so
LoadModule proxy_module /usr/lib/apache2/modules/mod_proxy.so
LoadModule proxy_http_module /usr/lib/apache2/modules/mod_proxy_http.so
KeepAlive On
$2
ProxyPass "/" "http://127.0.0.1:$UP/"
CONF
	bg apache2 -f "$W/apache-$1.conf" -DFOREGROUND
	wait_port "$1"
}
BAD=$(free_port)
apache "$BAD" 'StartServers 1
ServerLimit 1
ThreadsPerChild 16
MaxRequestWorkers 16'
BAD_PID=$BG_PID
FIX=$(free_port)
apache "$FIX" 'StartServers 2
ServerLimit 4
ThreadsPerChild 64
MaxRequestWorkers 256'
URL=/reports/daily
curl -sf "http://127.0.0.1:$BAD$URL" >&2

wait_idle
pd_record --perf "$BAD_PID" "$HERE/bad" 20 --load "http://127.0.0.1:$BAD$URL" -c 64 --warmup 5s
pd_verify "http://127.0.0.1:$BAD$URL" "http://127.0.0.1:$FIX$URL" "$HERE" -c 64 -d 10s --rounds 6 --warmup 2s
set_measured "$HERE" throughput
drop_measured "$HERE" cpu_per_unit # verify reads the listening parent, not the worker processes
