#!/usr/bin/env bash
# Re-records testdata/tomcat-threads-2-jfr: the corpus's boot-items
# application (Spring Boot, embedded Tomcat) with server.tomcat.threads.max=2
# in front of find_item's 20 ms wait, 32 connections of load, recorded for
# 12 s by perfdoctor collect --jfr alone (no load figures in the bundle).
# Takes the CPU lock; needs mvn, PostgreSQL and JDK 17, as the corpus does.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../../../corpus/lib.sh"
source "$CORPUS/jvm-apps/boot-items/boot.sh"
W=$(work_dir jvm011-tomcat)
cpu_lock
pd_build
JAVA=$(jdk_home 17)
JAR=$(boot_items_jar "$W")
DB=$(free_port)
boot_items_db "$W" "$DB" 20
PORT=$(free_port)
boot_items_start "$JAR" "$JAVA" "$PORT" "$DB" "$W/server.log" --server.tomcat.threads.max=2
"$PD" load "http://127.0.0.1:$PORT/items/5" -c 32 -d 5s >/dev/null
"$PD" load "http://127.0.0.1:$PORT/items/5" -c 32 -d 18s >/dev/null &
load=$!
dest=$here/tomcat-threads-2-jfr
cp "$dest/want.txt" "$W/want.txt"
rm -rf "$dest"
"$PD" collect --jfr "$BG_PID" -d 12s -o "$dest" >/dev/null
wait "$load"
cp "$W/want.txt" "$dest/want.txt"
