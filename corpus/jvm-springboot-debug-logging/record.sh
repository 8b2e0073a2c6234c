#!/usr/bin/env bash
# A Spring Boot web application run with logging.level.root=DEBUG, its
# console output going to a file as a service manager would take it: every
# request writes Tomcat's and Spring MVC's debug lines through Logback's
# synchronous console appender. The fix is the default level, INFO.
source "$(dirname "$0")/../lib.sh"
source "$CORPUS/jvm-apps/boot-items/boot.sh"
scenario_init
JAVA=$(jdk_home 17)
JAR=$(boot_items_jar "$W")

# /hello touches no database; the datasource is configured but never used.
DB=$(free_port)
BAD=$(free_port)
boot_items_start "$JAR" "$JAVA" "$BAD" "$DB" "$W/bad.log" --logging.level.root=DEBUG
BAD_PID=$BG_PID
FIX=$(free_port)
boot_items_start "$JAR" "$JAVA" "$FIX" "$DB" "$W/fixed.log" --logging.level.root=INFO
FIX_PID=$BG_PID

measure_http "$BAD_PID" "$FIX_PID" "http://127.0.0.1:$BAD/hello" "http://127.0.0.1:$FIX/hello" 15 -c 32
