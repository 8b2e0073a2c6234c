#!/usr/bin/env bash
# A Spring Boot web application that writes one INFO access-log line per
# request through Logback's console appender (its output going to a file as
# a service manager would take it), with a logging pattern that asks for the
# caller's location (%class.%method:%line): Logback then builds a Throwable
# and walks its stack trace for every logging event to find the calling
# frame. The fix is the same pattern without the location (the logger's
# name, which is the class, in its place), as Spring Boot's default pattern
# has it.
source "$(dirname "$0")/../lib.sh"
source "$CORPUS/jvm-apps/boot-items/boot.sh"
scenario_init
JAVA=$(jdk_home 17)

# This scenario's own copy of boot-items with an access-log filter added
# (app/AccessLog.java); the shared application stays as the other scenarios
# record it.
BUILD="$W/boot-items-accesslog"
mkdir -p "$BUILD"
cp -r "$BOOT_ITEMS_SRC/pom.xml" "$BOOT_ITEMS_SRC/src" "$BUILD/"
cp "$HERE/app/AccessLog.java" "$BUILD/src/main/java/corpus/items/"
mvn -q -B -f "$BUILD/pom.xml" package -DskipTests >&2
JAR="$BUILD/target/boot-items.jar"

# /hello touches no database; the datasource is configured but never used.
PATTERN='%d{yyyy-MM-dd HH:mm:ss.SSS} %5p [%t]'
DB=$(free_port)
BAD=$(free_port)
boot_items_start "$JAR" "$JAVA" "$BAD" "$DB" "$W/bad.log" \
	"--logging.pattern.console=$PATTERN %class.%method:%line - %m%n"
BAD_PID=$BG_PID
FIX=$(free_port)
boot_items_start "$JAR" "$JAVA" "$FIX" "$DB" "$W/fixed.log" \
	"--logging.pattern.console=$PATTERN %logger{39} - %m%n"

wait_idle 60
echo "load average as the measurement starts: $(cut -d" " -f1-3 /proc/loadavg)" >&2
measure_http "$BAD_PID" "" "http://127.0.0.1:$BAD/hello" "http://127.0.0.1:$FIX/hello" 15 -c 32
# The stack walk is CPU on the request threads, outside the appender's lock,
# and the load generator shares the two cores: the gain is the CPU per request.
set_measured "$HERE" cpu_per_unit
