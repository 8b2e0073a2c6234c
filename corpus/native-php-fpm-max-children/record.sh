#!/usr/bin/env bash
# Debian's PHP-FPM 8.2 behind Debian's nginx 1.22 over FastCGI (TCP, as the
# official php:fpm image listens), with the pool left at `pm = static` and
# `pm.max_children = 2`: a setting sized for a small machine's memory and
# never revisited. The page waits 20 ms (usleep, standing in for a call to
# a backend service) and then builds and encodes a small JSON document.
# 32 keep-alive clients at nginx: each request holds one of the two PHP
# workers for the 20 ms wait, so at most two are served at once and the
# rest queue in PHP-FPM's listen queue while the CPUs idle. The fix
# measured: pm.max_children = 32, the requests in flight (same pm = static,
# same page, same nginx). The recorded process is the bad pool's PHP-FPM
# master, as a user would name it ("PHP is slow"); its workers are its
# children.
source "$(dirname "$0")/../lib.sh"
apt_need php8.2-fpm nginx-light
scenario_init

mkdir -p "$W/www"
cat >"$W/www/items.php" <<'PHP'
<?php
// The inventory service's answer takes 20 ms.
usleep(20000);
$items = [];
for ($i = 0; $i < 200; $i++) {
    $items[] = ['id' => $i, 'sku' => sprintf('SKU-%05d', $i), 'price' => round($i * 1.07, 2), 'stock' => ($i * 7) % 13];
}
header('Content-Type: application/json');
echo json_encode(['items' => $items, 'count' => count($items)]);
PHP

# fpm PORT MAX_CHILDREN: a PHP-FPM master in the foreground with one pool
# on 127.0.0.1:PORT, pm = static; BG_PID is the master.
fpm() {
	cat >"$W/fpm-$1.conf" <<CONF
[global]
pid = $W/fpm-$1.pid
error_log = $W/fpm-$1.log
daemonize = no

[www]
user = nobody
group = nogroup
listen = 127.0.0.1:$1
pm = static
pm.max_children = $2
CONF
	bg php-fpm8.2 -F -y "$W/fpm-$1.conf"
	wait_port "$1"
}

# front PORT FPM_PORT: nginx passing every .php request to the pool.
front() {
	cat >"$W/nginx-$1.conf" <<CONF
worker_processes auto;
error_log $W/nginx-$1-error.log;
events { worker_connections 4096; }
http {
  access_log off;
  server {
    listen 127.0.0.1:$1 backlog=4096;
    keepalive_requests 100000;
    root $W/www;
    location ~ \.php\$ {
      include /etc/nginx/fastcgi_params;
      fastcgi_param SCRIPT_FILENAME \$document_root\$fastcgi_script_name;
      fastcgi_pass 127.0.0.1:$2;
    }
  }
}
CONF
	nginx_start "$W/nginx-$1.conf"
	wait_port "$1"
}

BAD_FPM=$(free_port)
fpm "$BAD_FPM" 2
BAD_PID=$BG_PID
FIX_FPM=$(free_port)
fpm "$FIX_FPM" 32
BAD=$(free_port)
front "$BAD" "$BAD_FPM"
FIX=$(free_port)
front "$FIX" "$FIX_FPM"
URL=/items.php
curl -sf "http://127.0.0.1:$BAD$URL" | head -c 120 >&2; echo >&2
curl -sf "http://127.0.0.1:$FIX$URL" >/dev/null

wait_idle
pd_record --perf "$BAD_PID" "$HERE/bad" 20 --load "http://127.0.0.1:$BAD$URL" -c 32 --warmup 5s
pd_verify "http://127.0.0.1:$BAD$URL" "http://127.0.0.1:$FIX$URL" "$HERE" -c 32 -d 10s --rounds 6 --warmup 2s
set_measured "$HERE" throughput
drop_measured "$HERE" cpu_per_unit # verify reads the listening nginx master, not PHP-FPM's workers
echo "pool logs: $(tail -n3 "$W/fpm-$BAD_FPM.log" | tr '\n' ' ')" >&2
