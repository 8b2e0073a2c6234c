#!/usr/bin/env bash
# A Spring Boot web application whose HikariCP pool holds one connection
# (spring.datasource.hikari.maximum-pool-size=1) in front of a database call
# that waits 20 ms: Tomcat's 200 threads all queue on the pool's one
# connection while the CPUs idle. The fix is Hikari's default of 10.
source "$(dirname "$0")/../lib.sh"
source "$CORPUS/jvm-apps/boot-items/boot.sh"
scenario_init
JAVA=$(jdk_home 25)
JAR=$(boot_items_jar "$W")

DB=$(free_port)
boot_items_db "$W" "$DB" 20
BAD=$(free_port)
boot_items_start "$JAR" "$JAVA" "$BAD" "$DB" "$W/bad.log" --spring.datasource.hikari.maximum-pool-size=1
BAD_PID=$BG_PID
FIX=$(free_port)
boot_items_start "$JAR" "$JAVA" "$FIX" "$DB" "$W/fixed.log" --spring.datasource.hikari.maximum-pool-size=10

measure_http "$BAD_PID" "" "http://127.0.0.1:$BAD/items/5" "http://127.0.0.1:$FIX/items/5" 10 -c 32
