#!/bin/sh
# Records cputime.jfr on Temurin 25 (JAVA_HOME, else its Debian path): both
# of the JDK's CPU samplers on CPUTime.java for 6 s, jdk.ExecutionSample
# every 10 ms (settings=profile) and jdk.CPUTimeSample (JEP 509, off by
# default) every 10 ms of CPU, cut down to the events the reader needs.
# Run under the CPU lock.
set -eu
cd "$(dirname "$0")"
java_home=${JAVA_HOME:-/usr/lib/jvm/temurin-25-jdk-amd64}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$java_home/bin/javac" -d "$tmp" CPUTime.java
env -i PATH=/usr/bin:/bin "$java_home/bin/java" \
	"-XX:StartFlightRecording:filename=$tmp/full.jfr,settings=profile,jdk.CPUTimeSample#enabled=true,jdk.CPUTimeSample#throttle=10ms" \
	-Xlog:jfr=warning -cp "$tmp" CPUTime 6000 >/dev/null
"$java_home/bin/jfr" scrub --include-events jdk.ExecutionSample,jdk.CPUTimeSample,jdk.CPUTimeSamplesLost,jdk.JVMInformation,jdk.CPUInformation,jdk.CPULoad,jdk.ActiveRecording \
	"$tmp/full.jfr" cputime.jfr >/dev/null
"$java_home/bin/jfr" summary cputime.jfr | grep -E 'Sample|Chunks'
