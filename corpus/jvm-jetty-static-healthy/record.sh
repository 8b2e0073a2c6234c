#!/usr/bin/env bash
# Healthy: Jetty 12 (jetty-home, the http and ee10-deploy modules, default
# settings) serving a static 3 KB text file (the distribution's NOTICE) to
# 32 keep-alive connections, saturated on the machine's two cores. The
# plausible change measured is a bigger thread pool
# (jetty.threadPool.maxThreads 200 -> 400), which should change nothing.
source "$(dirname "$0")/../lib.sh"
source "$CORPUS/jvm-apps/jetty/jetty.sh"
scenario_init
JAVA=$(jdk_home 17)
HOME_DIR=$(jetty_home "$W")

jetty_base "$HOME_DIR" "$W/base" http,ee10-deploy
mkdir -p "$W/base/webapps/ROOT"
cp "$HOME_DIR/NOTICE.txt" "$W/base/webapps/ROOT/notice.txt"
BAD=$(free_port)
jetty_start "$JAVA" "$HOME_DIR" "$W/base" "$BAD" "$W/jetty.log" -Xms256m -Xmx256m
BAD_PID=$BG_PID
ALT=$(free_port)
jetty_start "$JAVA" "$HOME_DIR" "$W/base" "$ALT" "$W/jetty-alt.log" -Xms256m -Xmx256m jetty.threadPool.maxThreads=400
URL=/notice.txt

measure_http "$BAD_PID" "" "http://127.0.0.1:$BAD$URL" "http://127.0.0.1:$ALT$URL" 30 -c 32
