#!/usr/bin/env bash
# Re-records the casebook's JVM cases' bundles for the offline test
# (casebook/recorded_test.go), as casebook/record.sh does for the Go cases:
# each case's live test (casebook/java) runs both variants under load and
# keeps each bundle with its want.txt, then the bundles are trimmed and
# moved into casebook/testdata/recorded/jdkN (N the JVM's release: Debian's
# JDK 17 on PATH; J1 and E5's async-profiler variant also on the JDK 22+ the
# tests find, Temurin 25 here). One test at a time under the machine's CPU
# lock, about 8 minutes in all on 2 cores. Not part of CI. Needs the
# environment scripts/test.sh sets up (PERFDOCTOR_SPRING_CORE_JAR,
# PERFDOCTOR_ASYNC_PROFILER).
#
#   casebook/record-jvm.sh            every case
#   casebook/record-jvm.sh e5 j2      some (the others are kept)
set -euo pipefail
cd "$(dirname "$0")/.."
source casebook/record-lib.sh
dest=casebook/testdata/recorded
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

declare -A tests=(
	[e4]='TestE4FrameworkRouting'
	[e5]='TestE5ExceptionOverhead|TestE5AsyncProfiler'
	[j1]='TestJ1PinnedVirtualThreads'
	[j2]='TestJ2ContendedMonitor'
	[j3]='TestJ3SmallThreadPool'
)
cases=("$@")
[ ${#cases[@]} -gt 0 ] || cases=(e4 e5 j1 j2 j3)
for c in "${cases[@]}"; do
	[ -n "${tests[$c]:-}" ] || { echo "no JVM case $c (${!tests[*]})" >&2; exit 2; }
	rm -rf "${tmp:?}"/*
	PERFDOCTOR_CASEBOOK_BUNDLES="$tmp" PERFDOCTOR_CASEBOOK_JVM_CASES="$c" flock /tmp/perfdoctor-cpu.lock \
		go test -count=1 -timeout 15m -run "^(${tests[$c]})\$" ./casebook/java
	for d in "$tmp"/jdk*/*/; do
		release=$(basename "$(dirname "$d")")
		name=$(basename "$d")
		keep_recording "$d" "$dest/$release/$name"
	done
done
du -sh "$dest"/jdk*
