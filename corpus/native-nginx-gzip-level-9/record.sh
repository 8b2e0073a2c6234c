#!/usr/bin/env bash
# Debian's nginx 1.22 (nginx-light) serving a static JavaScript asset
# (jquery.min.js, 89 KB, from Debian's libjs-jquery) with on-the-fly gzip
# at `gzip_comp_level 9` to clients that accept gzip: every response
# compresses the same 89 KB again. 16 keep-alive clients. The fix measured:
# `gzip_static on` with the file compressed once beside it
# (jquery.min.js.gz, gzip -9), which nginx sends as it is (sendfile). Also
# measured, into verify-level-1.json: the same on-the-fly gzip at level 1.
# The recorded process is the master, as a user would name it.
source "$(dirname "$0")/../lib.sh"
apt_need nginx-light libjs-jquery
scenario_init

mkdir -p "$W/www"
cp /usr/share/javascript/jquery/jquery.min.js "$W/www/"
gzip -9 -n -k -f "$W/www/jquery.min.js"

# site PORT GZIP-DIRECTIVES: an nginx serving $W/www.
site() {
	nginx_site "$W" "$1" keepalive server='gzip on;' \
		server='gzip_types application/javascript text/css application/json;' server="$2"
}
BAD=$(free_port)
site "$BAD" 'gzip_comp_level 9;'
BAD_PID=$BG_PID
FIX=$(free_port)
site "$FIX" 'gzip_comp_level 9; gzip_static on;'
LVL1=$(free_port)
site "$LVL1" 'gzip_comp_level 1;'
URL=/jquery.min.js
for p in "$BAD" "$FIX" "$LVL1"; do
	curl -sf -H 'Accept-Encoding: gzip' -o /dev/null -w "%{size_download} bytes, %{content_type}\n" "http://127.0.0.1:$p$URL" >&2
done

AE=(-H 'Accept-Encoding: gzip')
wait_idle
pd_record --perf "$BAD_PID" "$HERE/bad" 20 --load "http://127.0.0.1:$BAD$URL" -c 16 "${AE[@]}" --warmup 5s
pd_verify "http://127.0.0.1:$BAD$URL" "http://127.0.0.1:$FIX$URL" "$HERE" -c 16 "${AE[@]}" -d 10s --rounds 6 --warmup 2s
set_measured "$HERE" throughput
drop_measured "$HERE" cpu_per_unit # verify reads the listening master, not the workers
tmp=$(mktemp -d)
pd_verify "http://127.0.0.1:$BAD$URL" "http://127.0.0.1:$LVL1$URL" "$tmp" -c 16 "${AE[@]}" -d 10s --rounds 6 --warmup 2s
mv "$tmp/verify.json" "$HERE/verify-level-1.json"
rm -rf "$tmp"
