#!/bin/sh
# Re-makes the JFR fixtures of the JVM rules JVM015-JVM020 from the Java
# programs beside this script: ./record.sh [fixture...] (all when none).
# Each program runs under JFR's "profile" settings (what perfdoctor collect
# --jfr records) and the recording is cut down with `jfr scrub` to the
# events perfdoctor reads, to keep the fixtures small.
set -eu
JDK17=${JDK17:-/usr/lib/jvm/java-17-openjdk-amd64}
JDK25=${JDK25:-/usr/lib/jvm/temurin-25-jdk-amd64}
DNS="-XX:+UnlockDiagnosticVMOptions -XX:+DebugNonSafepoints"
here=$(cd "$(dirname "$0")" && pwd)
classes=$(mktemp -d)
trap 'rm -rf "$classes"' EXIT

# name, JDK, JVM options, program and its arguments, JFR settings added to
# "profile", and what a tool does to the running JVM meanwhile (heapdumps:
# jcmd GC.heap_dump three times)
fixtures() {
	cat <<LIST
healthy-jdk17|$JDK17|-Xmx256m $DNS|Healthy 8
healthy-jdk25|$JDK25|-Xmx256m $DNS|Healthy 8
healthy-zgc-jdk25|$JDK25|-XX:+UseZGC -Xmx512m $DNS|Healthy 8
safepoints-jdk17|$JDK17|-XX:+UseSerialGC -Xmx256m|Safepoints 8
allocstall-zgc-jdk25|$JDK25|-XX:+UseZGC -Xmx96m|AllocStall 3
codecache-jdk25|$JDK25|-XX:ReservedCodeCacheSize=2600k -XX:FlightRecorderOptions:stackdepth=8|CodeCache 7
gcheavy-jdk17|$JDK17|-Xmx128m|GCHeavy 8
deepstacks-jdk25|$JDK25|$DNS|DeepStacks 6
heapdumps-jdk17|$JDK17|-Xmx256m $DNS|Healthy 8||heapdumps
safepoints-jdk25|$JDK25|-XX:+UseSerialGC -Xmx256m|Safepoints 6|,+jdk.SafepointLatency#enabled=true,+jdk.SafepointLatency#stackTrace=true|
LIST
}

# The events perfdoctor reads (formats/jfr.Events) and the metadata they need.
keep=$(grep -o '"jdk\.[A-Za-z]*"' "$here/../../../formats/jfr/jfr.go" | tr -d '"' | paste -sd, -)

fixtures | while IFS='|' read -r name jdk opts main settings tool; do
	if [ $# -gt 0 ] && ! printf '%s\n' "$@" | grep -qx "$name"; then
		continue
	fi
	"$jdk/bin/javac" -d "$classes" "$here/${main%% *}.java"
	raw="$classes/$name.jfr"
	# shellcheck disable=SC2086
	env -i PATH=/usr/bin:/bin "$jdk/bin/java" $opts -XX:StartFlightRecording=settings=profile"$settings",filename="$raw" \
		-cp "$classes" $main >/dev/null &
	pid=$!
	if [ "$tool" = heapdumps ]; then
		for i in 1 2 3; do
			sleep 2
			"$jdk/bin/jcmd" "$pid" GC.heap_dump "$classes/heap-$i.hprof" >/dev/null
		done
	fi
	wait "$pid"
	"$JDK25/bin/jfr" scrub --include-events "$keep" "$raw" "$here/$name.jfr" >/dev/null
	echo "$name: $(wc -c <"$here/$name.jfr") bytes"
done
