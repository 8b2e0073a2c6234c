#!/bin/sh
# Records large.jfr, the reader's benchmark input (not kept in the
# repository: several MB): async-profiler 4.6 as collect --jvm loads it
# (CPU through perf events with VM, native and kernel frames, allocations
# every 512 KiB, locks over 10 ms) on Busy.java for 60 s on the system JDK.
# The jar comes from Maven (mvn dependency:get
# -Dartifact=tools.profiler:async-profiler:4.6) or perfdoctor
# fetch-async-profiler; ASYNC_PROFILER_JAR names another. Run as root (perf
# events), under the CPU lock. Usage: record.sh [SECONDS]
set -eu
cd "$(dirname "$0")"
secs=${1:-60}
jar=${ASYNC_PROFILER_JAR:-$HOME/.m2/repository/tools/profiler/async-profiler/4.6/async-profiler-4.6.jar}
[ -f "$jar" ] || jar=$HOME/.cache/perfdoctor/maven/async-profiler-4.6.jar
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
unzip -q -j "$jar" linux-x64/libasyncProfiler.so -d "$tmp"
javac -d "$tmp" Busy.java
java "-agentpath:$tmp/libasyncProfiler.so=start,event=cpu,interval=10ms,cstack=vm,alloc=512k,lock=10ms,jfr,file=$PWD/large.jfr" \
	-cp "$tmp" Busy $((secs * 1000)) >/dev/null
ls -l large.jfr
