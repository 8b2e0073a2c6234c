#!/usr/bin/env bash
# A Spring Boot web application (embedded Tomcat) whose request threads are
# capped at 2 (server.tomcat.threads.max=2) in front of a database call that
# waits 20 ms: requests queue for a worker while the CPUs idle. The fix is
# Tomcat's default of 200 threads (the Hikari pool of 10 then bounds it).
source "$(dirname "$0")/../lib.sh"
source "$CORPUS/jvm-apps/boot-items/boot.sh"
scenario_init
JAVA=$(jdk_home 17)
JAR=$(boot_items_jar "$W")

DB=$(free_port)
boot_items_db "$W" "$DB" 20
BAD=$(free_port)
boot_items_start "$JAR" "$JAVA" "$BAD" "$DB" "$W/bad.log" --server.tomcat.threads.max=2
BAD_PID=$BG_PID
FIX=$(free_port)
boot_items_start "$JAR" "$JAVA" "$FIX" "$DB" "$W/fixed.log" --server.tomcat.threads.max=200
FIX_PID=$BG_PID

measure_http "$BAD_PID" "$FIX_PID" "http://127.0.0.1:$BAD/items/5" "http://127.0.0.1:$FIX/items/5" 10 -c 32
