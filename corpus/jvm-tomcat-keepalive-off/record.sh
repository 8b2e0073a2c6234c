#!/usr/bin/env bash
# Tomcat 11 (its distribution) with maxKeepAliveRequests="1" on the HTTP
# connector: every response closes its connection, so every request opens a
# new one (accept, a socket and a poller registration per request). The
# workload is the ROOT webapp's stylesheet, a 5.5 KB static file. The fix
# is the default (100), or -1 for no limit.
source "$(dirname "$0")/../lib.sh"
source "$CORPUS/jvm-apps/tomcat/tomcat.sh"
scenario_init
JAVA=$(jdk_home 17)
TC=$(tomcat_home "$W")

BAD=$(free_port)
tomcat_base "$TC" "$W/base-bad" "$BAD" 'maxKeepAliveRequests="1"'
tomcat_start "$JAVA" "$TC" "$W/base-bad" "$BAD" -Xms256m -Xmx256m
BAD_PID=$BG_PID
FIX=$(free_port)
tomcat_base "$TC" "$W/base-fixed" "$FIX"
tomcat_start "$JAVA" "$TC" "$W/base-fixed" "$FIX" -Xms256m -Xmx256m
URL=/tomcat.css

measure_http "$BAD_PID" "" "http://127.0.0.1:$BAD$URL" "http://127.0.0.1:$FIX$URL" 20 -c 32
