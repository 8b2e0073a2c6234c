#!/bin/sh
# Re-makes CPU002's JFR fixtures from Login.java beside this script:
# ./record.sh [fixture...] (all when none). The program runs under JFR's
# "profile" settings (what perfdoctor collect --jfr records), from 2 s
# after start (past start-up, where even the fixed variant hashes the
# stored password and its first request's), and the recording is cut down with `jfr scrub` to the events perfdoctor reads.
# Take the machine's CPU lock first: flock /tmp/perfdoctor-cpu.lock ./record.sh
set -eu
JDK17=${JDK17:-/usr/lib/jvm/java-17-openjdk-amd64}
JDK25=${JDK25:-/usr/lib/jvm/temurin-25-jdk-amd64}
here=$(cd "$(dirname "$0")" && pwd)
classes=$(mktemp -d)
trap 'rm -rf "$classes"' EXIT

# name, JDK, program arguments
fixtures() {
	cat <<LIST
login-bad-jdk17|$JDK17|bad 10
login-fixed-jdk17|$JDK17|fixed 10
login-bad-jdk25|$JDK25|bad 10
LIST
}

keep=$(grep -o '"jdk\.[A-Za-z]*"' "$here/../../../../formats/jfr/jfr.go" | tr -d '"' | paste -sd, -)

fixtures | while IFS='|' read -r name jdk args; do
	if [ $# -gt 0 ] && ! printf '%s\n' "$@" | grep -qx "$name"; then
		continue
	fi
	"$jdk/bin/javac" -d "$classes" "$here/Login.java"
	raw="$classes/$name.jfr"
	# shellcheck disable=SC2086
	env -i PATH=/usr/bin:/bin "$jdk/bin/java" -Xmx256m -XX:+UnlockDiagnosticVMOptions -XX:+DebugNonSafepoints \
		-XX:StartFlightRecording=delay=2s,settings=profile,filename="$raw" -cp "$classes" perfdoctor.redone.Login $args >/dev/null
	"$JDK25/bin/jfr" scrub --include-events "$keep" "$raw" "$here/$name.jfr" >/dev/null
	echo "$name: $(wc -c <"$here/$name.jfr") bytes"
done
