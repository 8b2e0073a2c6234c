#!/bin/sh
# Times the native reader against the JDK's jfr tool on the same recording
# (large.jfr from record.sh, or the file given), best of three each:
#   perfdoctor export FILE --format pprof   the native reader, profile written
#   jfr print --json --events ...           the events the reader uses, as the
#                                           JSON path asks for them
#   jfr print --json                        every event, as a user would print it
# Run under the CPU lock from the repository's root or this directory.
set -eu
cd "$(dirname "$0")"
file=${1:-large.jfr}
root=$(git rev-parse --show-toplevel)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$root" && go build -o "$tmp/perfdoctor" ./cmd/perfdoctor)
events=$(cd "$root" && go run ./formats/jfr/testdata/large/events)
best() { # best of three wall-clock seconds of the command
	b=
	for _ in 1 2 3; do
		s=$(date +%s.%N)
		"$@" >/dev/null 2>&1
		e=$(date +%s.%N)
		t=$(echo "$e - $s" | bc)
		if [ -z "$b" ] || [ "$(echo "$t < $b" | bc)" = 1 ]; then b=$t; fi
	done
	echo "$b"
}
n=$(best "$tmp/perfdoctor" export "$file" --format pprof -o "$tmp/cpu.pb.gz")
e=$(best jfr print --json --stack-depth 256 --events "$events" "$file")
a=$(best jfr print --json "$file")
printf '%s, %s bytes\n' "$file" "$(stat -c %s "$file")"
printf 'perfdoctor export (native reader)   %6.2f s\n' "$n"
printf 'jfr print --json --events (reader)  %6.2f s  %5.1fx\n' "$e" "$(echo "$e / $n" | bc -l)"
printf 'jfr print --json (all events)       %6.2f s  %5.1fx\n' "$a" "$(echo "$a / $n" | bc -l)"
