#!/usr/bin/env bash
# Re-records every casebook variant's bundle for the offline test
# (casebook/recorded_test.go): the live e2e (TestCasebook) runs each case
# under load and keeps its bundle with its want.txt, then the bundles are
# trimmed and moved into casebook/testdata/recorded/goX.Y. About 10 minutes
# on 2 cores, under the machine's CPU lock. Not part of CI.
#
#   casebook/record.sh                 every case, services built with this Go
#   PERFDOCTOR_CASEBOOK_CASES=d1,b3 casebook/record.sh    some (the others are kept)
#   PERFDOCTOR_CASEBOOK_GO=go1.27.0 casebook/record.sh     services built with that Go
set -euo pipefail
cd "$(dirname "$0")/.."
source casebook/record-lib.sh
version=${PERFDOCTOR_CASEBOOK_GO:-$(go env GOVERSION)}
dest=casebook/testdata/recorded/$(echo "$version" | grep -oE '^go[0-9]+\.[0-9]+')
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

PERFDOCTOR_CASEBOOK_BUNDLES="$tmp" flock /tmp/perfdoctor-cpu.lock \
	go test -count=1 -timeout 30m -run 'TestCasebook$' ./casebook/e2e

# Traces are most of a bundle: each is cut to its first 200 KB (perfdoctor
# reads a cut trace as far as it goes and says so), except where the case's
# expectations read the whole trace: measured by cutting them, which fails
# the offline test for these.
whole_trace="b1-bad g1-bad g2-bad l1-bad l1-fixed l2-bad l3-bad l4-bad"
mkdir -p "$dest"
# A pass on another Go keeps its bundles in a folder of that toolchain's name.
kept=$tmp${PERFDOCTOR_CASEBOOK_GO:+/$PERFDOCTOR_CASEBOOK_GO}
for d in "$kept"/*/; do
	name=$(basename "$d")
	if [ -f "$d/trace.out" ] && [[ " $whole_trace " != *" $name "* ]]; then
		head -c 200000 "$d/trace.out" >"$d/trace.cut" && mv "$d/trace.cut" "$d/trace.out"
	fi
	keep_recording "$d" "$dest/$name"
done
du -sh "$dest"
