#!/bin/sh
# Records the two native fixtures: churn.c (a C client dialling a new TCP
# connection for every 64-byte request to its own server child, or keeping
# one) under `perfdoctor collect --perf` for 5 s. Needs gcc, perf and a
# perfdoctor binary (PERFDOCTOR, default: perfdoctor on PATH). Run from here.
set -eu
pd=${PERFDOCTOR:-perfdoctor}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
gcc -O2 -g -fno-omit-frame-pointer -o "$tmp/churn" churn.c
for mode in churn reuse; do
	"$tmp/churn" "$mode" 10 &
	pid=$!
	sleep 1
	rm -rf "$mode.new"
	"$pd" collect --perf "$pid" -d 5s -o "$mode.new"
	wait "$pid"
	cp "$mode/want.txt" "$mode.new/" 2>/dev/null || true
	rm -rf "$mode" && mv "$mode.new" "$mode"
done
