#!/usr/bin/env bash
# Records the JVM thread rules' fixtures (see ThreadWork.java) with a JDK 22
# or later (JAVA_HOME, else Temurin 25 where this machine has it) and keeps
# only the events the rules read, gzipped. Usage: record.sh [MODE...]
set -euo pipefail
cd "$(dirname "$0")"
java_home=${JAVA_HOME:-/usr/lib/jvm/temurin-25-jdk-amd64}
events=jdk.ExecutionSample,jdk.JavaMonitorEnter,jdk.JavaMonitorWait,jdk.ThreadPark,jdk.ThreadSleep,jdk.VirtualThreadPinned,jdk.ThreadCPULoad,jdk.CPULoad,jdk.CPUInformation,jdk.JVMInformation,jdk.JavaThreadStatistics,jdk.ThreadStart,jdk.ThreadContextSwitchRate
modes=("$@")
[ ${#modes[@]} -gt 0 ] || modes=(pinned unpinned locks unlocked smallpool rightpool sleepers largepool unbalanced balanced switches bursts)
classes=$(mktemp -d)
trap 'rm -rf "$classes"' EXIT
"$java_home/bin/javac" -d "$classes" ThreadWork.java
for m in "${modes[@]}"; do
	env -i PATH=/usr/bin:/bin "$java_home/bin/java" --enable-native-access=ALL-UNNAMED \
		"-XX:StartFlightRecording:filename=/tmp/threadwork-$m.jfr,settings=profile,jdk.ThreadCPULoad#period=1s,jdk.ThreadContextSwitchRate#period=1s" \
		-Xlog:jfr=warning -cp "$classes" perfdoctor.fixtures.ThreadWork "$m"
	"$java_home/bin/jfr" scrub --include-events "$events" "/tmp/threadwork-$m.jfr" "/tmp/threadwork-$m-scrubbed.jfr" >/dev/null
	gzip -9 -c "/tmp/threadwork-$m-scrubbed.jfr" >"$m.jfr.gz"
	rm "/tmp/threadwork-$m.jfr" "/tmp/threadwork-$m-scrubbed.jfr"
	echo "$m.jfr.gz: $(stat -c %s "$m.jfr.gz") bytes"
done
