#!/usr/bin/env bash
# Debian's caddy (2.6.2, Go 1.19) as a reverse proxy in front of another
# caddy answering a 1 KB JSON document, with `keepalive off` in the proxy's
# http transport: every proxied request dials a new connection to the
# upstream and closes it. The fix measured: the default (keep-alive on).
source "$(dirname "$0")/../lib.sh"
HERE=$(cd "$(dirname "$0")" && pwd)
apt_need caddy
pd_build
WORK=$(mktemp -d)

# start_caddy PORT CADDYFILE_BODY: a caddy with the given Caddyfile.
start_caddy() {
	printf '%s\n' "$2" >"$WORK/Caddyfile.$1"
	HOME=$WORK XDG_DATA_HOME=$WORK/data XDG_CONFIG_HOME=$WORK/config \
		bg caddy run --config "$WORK/Caddyfile.$1" --adapter caddyfile
	wait_port "$1"
}
DOC=$(python3 -c 'import json; print(json.dumps({"items": [{"id": i, "name": "item-%d" % i, "price": i * 1.25} for i in range(24)]}))')
UP=$(free_port)
start_caddy "$UP" "{
	admin off
	auto_https off
}
http://127.0.0.1:$UP {
	header Content-Type application/json
	respond \`$DOC\` 200
}"
# proxy PORT ADMIN TRANSPORT: the proxy under test.
proxy() {
	start_caddy "$1" "{
	admin 127.0.0.1:$2
	auto_https off
}
http://127.0.0.1:$1 {
	reverse_proxy 127.0.0.1:$UP {
		transport http {
			$3
		}
	}
}"
}
BAD=$(free_port) BAD_ADMIN=$(free_port)
proxy "$BAD" "$BAD_ADMIN" 'keepalive off'
GOOD=$(free_port) GOOD_ADMIN=$(free_port)
proxy "$GOOD" "$GOOD_ADMIN" ''
curl -sf "http://127.0.0.1:$BAD/api/items" | head -c 80 || true; echo

cpu_lock
wait_idle
"$PD" run --target "http://127.0.0.1:$BAD_ADMIN" --load "http://127.0.0.1:$BAD/api/items" \
	-c 16 --warmup 5s -d 20s -o "$WORK/run" >"$WORK/run.txt"
keep_bundle "$WORK/run" "$HERE/bad"
"$PD" verify --before "http://127.0.0.1:$BAD/api/items" --after "http://127.0.0.1:$GOOD/api/items" \
	-c 16 --rounds 6 -d 5s --out "$WORK/verify"
record_verify "$WORK/verify" "$HERE"
rm -rf "$WORK"
