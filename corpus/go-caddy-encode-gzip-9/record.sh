#!/usr/bin/env bash
# Caddy 2.11.9 (go install from the module proxy) serving a site's
# jquery.min.js (89 KB) with `encode { gzip 9 }`: every response is
# compressed again, at the slowest level, though the file never changes.
# The fix measured: compress it once at deploy time and serve it with
# `file_server { precompressed gzip }`. A second verify measures the milder
# fix, the encoder's default level, for comparison.
source "$(dirname "$0")/../lib.sh"
HERE=$(cd "$(dirname "$0")" && pwd)
apt_need libjs-jquery
go_install github.com/caddyserver/caddy/v2/cmd/caddy@v2.11.9
CADDY=$GO_BIN
pd_build
WORK=$(mktemp -d)
mkdir -p "$WORK/site" "$WORK/site-gz"
cp /usr/share/javascript/jquery/jquery.min.js "$WORK/site/"
cp /usr/share/javascript/jquery/jquery.min.js "$WORK/site-gz/"
gzip -9 -k -n "$WORK/site-gz/jquery.min.js"

# start_caddy PORT ADMIN SITE ENCODE FILE_SERVER_OPTIONS
start_caddy() {
	cat >"$WORK/Caddyfile.$1" <<CONF
{
	admin 127.0.0.1:$2
	auto_https off
	persist_config off
}
http://127.0.0.1:$1 {
	root * $3
	$4
	file_server {
		$5
	}
}
CONF
	HOME=$WORK XDG_DATA_HOME=$WORK/data XDG_CONFIG_HOME=$WORK/config \
		bg "$CADDY" run --config "$WORK/Caddyfile.$1" --adapter caddyfile
	wait_port "$1"
}
BAD=$(free_port) BAD_ADMIN=$(free_port)
start_caddy "$BAD" "$BAD_ADMIN" "$WORK/site" 'encode {
		gzip 9
	}' ''
GOOD=$(free_port) GOOD_ADMIN=$(free_port)
start_caddy "$GOOD" "$GOOD_ADMIN" "$WORK/site-gz" 'encode gzip' 'precompressed gzip'
LEVEL=$(free_port) LEVEL_ADMIN=$(free_port)
start_caddy "$LEVEL" "$LEVEL_ADMIN" "$WORK/site" 'encode gzip' ''
ASSET=/jquery.min.js
curl -sf -H 'Accept-Encoding: gzip' -o /dev/null -w 'bad: %{size_download} bytes\n' "http://127.0.0.1:$BAD$ASSET"
curl -sf -H 'Accept-Encoding: gzip' -o /dev/null -w 'precompressed: %{size_download} bytes\n' "http://127.0.0.1:$GOOD$ASSET"
curl -sf -H 'Accept-Encoding: gzip' -o /dev/null -w 'default level: %{size_download} bytes\n' "http://127.0.0.1:$LEVEL$ASSET"

cpu_lock
wait_idle
"$PD" run --target "http://127.0.0.1:$BAD_ADMIN" --load "http://127.0.0.1:$BAD$ASSET" -H 'Accept-Encoding: gzip' \
	-c 16 --warmup 5s -d 20s -o "$WORK/run" >"$WORK/run.txt"
keep_bundle "$WORK/run" "$HERE/bad"
"$PD" verify --before "http://127.0.0.1:$BAD$ASSET" --after "http://127.0.0.1:$GOOD$ASSET" -H 'Accept-Encoding: gzip' \
	-c 16 --rounds 6 -d 5s --out "$WORK/verify"
record_verify "$WORK/verify" "$HERE"
"$PD" verify --before "http://127.0.0.1:$BAD$ASSET" --after "http://127.0.0.1:$LEVEL$ASSET" -H 'Accept-Encoding: gzip' \
	-c 16 --rounds 6 -d 5s --out "$WORK/verify-level"
cp "$WORK/verify-level/verify.json" "$HERE/verify-default-level.json"
rm -rf "$WORK"
