#!/usr/bin/env bash
# A Spring Boot web application (embedded Tomcat) whose request threads are
# capped at 2 (server.tomcat.threads.max=2) in front of a database call that
# waits 20 ms: requests queue for a worker while the CPUs idle. The fix is
# Tomcat's default of 200 threads (the Hikari pool of 10 then bounds it).
source "$(dirname "$0")/../lib.sh"
source "$CORPUS/jvm-apps/boot-items/boot.sh"
HERE=$(cd "$(dirname "$0")" && pwd)
W=$(work_dir "$(basename "$HERE")")
cpu_lock
pd_build
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

warm "http://127.0.0.1:$BAD/items/5" 10
warm "http://127.0.0.1:$FIX/items/5" 10
jvm_record "$BAD_PID" "http://127.0.0.1:$BAD/items/5" "$HERE/bad" 20 -c 32
pd_verify "http://127.0.0.1:$BAD/items/5" "http://127.0.0.1:$FIX/items/5" "$HERE" \
	-c 32 -d 10s --rounds 6 --warmup 2s
jvm_record "$FIX_PID" "http://127.0.0.1:$FIX/items/5" "$HERE/fixed" 20 -c 32
set_measured "$HERE" throughput
