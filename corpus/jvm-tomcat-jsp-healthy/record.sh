#!/usr/bin/env bash
# Healthy: Tomcat 11 (its distribution, default configuration) serving its
# own welcome page, index.jsp (a compiled JSP, 11 KB), to 32 keep-alive
# connections, saturated on the machine's two cores. The plausible change
# measured is a bigger request thread pool (maxThreads 200 -> 400), which
# should change nothing: the CPUs are the limit, not the threads.
source "$(dirname "$0")/../lib.sh"
source "$CORPUS/jvm-apps/tomcat/tomcat.sh"
scenario_init
JAVA=$(jdk_home 25)
TC=$(tomcat_home "$W")

BAD=$(free_port)
tomcat_base "$TC" "$W/base" "$BAD"
tomcat_start "$JAVA" "$TC" "$W/base" "$BAD" -Xms256m -Xmx256m
BAD_PID=$BG_PID
ALT=$(free_port)
tomcat_base "$TC" "$W/base-alt" "$ALT" 'maxThreads="400"'
tomcat_start "$JAVA" "$TC" "$W/base-alt" "$ALT" -Xms256m -Xmx256m
URL=/

measure_http "$BAD_PID" "" "http://127.0.0.1:$BAD$URL" "http://127.0.0.1:$ALT$URL" 30 -c 32
