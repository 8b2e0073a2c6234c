#!/usr/bin/env bash
# Jetty 12 (jetty-home) serving a static 836 KB JSON document through its
# GzipHandler at compression level 9 (start.d/gzip.ini): every response
# compresses the same bytes again at the slowest level. The fix serves the
# file compressed once at deploy time (the DefaultServlet's precompressed
# option), the GzipHandler still on for dynamic content.
source "$(dirname "$0")/../lib.sh"
source "$CORPUS/jvm-apps/jetty/jetty.sh"
scenario_init
JAVA=$(jdk_home 25)
HOME_DIR=$(jetty_home "$W")

# The document: Jetty's own software bill of materials (CycloneDX JSON), a
# real catalogue-sized JSON file that ships with the distribution.
make_base() {
	local base=$1
	jetty_base "$HOME_DIR" "$base" http,ee10-deploy,gzip
	sed -i 's/^# *jetty.gzip.deflaterPool.compressionLevel=.*/jetty.gzip.deflaterPool.compressionLevel=9/' "$base/start.d/gzip.ini"
	grep -q '^jetty.gzip.deflaterPool.compressionLevel=9' "$base/start.d/gzip.ini"
	mkdir -p "$base/webapps/ROOT/WEB-INF"
	cp "$HOME_DIR"/jetty-home-*-cyclonedx.json "$base/webapps/ROOT/catalog.json"
}
make_base "$W/base-bad"
make_base "$W/base-fixed"
gzip -9 -k -n "$W/base-fixed/webapps/ROOT/catalog.json"
cat >"$W/base-fixed/webapps/ROOT/WEB-INF/web.xml" <<'XML'
<?xml version="1.0" encoding="UTF-8"?>
<web-app xmlns="https://jakarta.ee/xml/ns/jakartaee" version="6.0">
  <context-param>
    <param-name>org.eclipse.jetty.servlet.Default.precompressed</param-name>
    <param-value>true</param-value>
  </context-param>
</web-app>
XML

BAD=$(free_port)
jetty_start "$JAVA" "$HOME_DIR" "$W/base-bad" "$BAD" "$W/bad.log" -Xms256m -Xmx256m
BAD_PID=$BG_PID
FIX=$(free_port)
jetty_start "$JAVA" "$HOME_DIR" "$W/base-fixed" "$FIX" "$W/fixed.log" -Xms256m -Xmx256m
GZ=(-H 'Accept-Encoding: gzip')
for p in "$BAD" "$FIX"; do
	curl -fsS -o /dev/null -D - "${GZ[@]}" "http://127.0.0.1:$p/catalog.json" | grep -qi '^content-encoding: gzip'
done

measure_http "$BAD_PID" "" "http://127.0.0.1:$BAD/catalog.json" "http://127.0.0.1:$FIX/catalog.json" 10 -c 16 "${GZ[@]}"
