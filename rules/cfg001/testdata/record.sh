#!/usr/bin/env bash
# Records CFG001's fixtures from svc (testdata/svc), a catalogue service
# written for this rule, each started with one setting under test, loaded
# with perfdoctor run (8 clients, 15 s window) and, where a fix is a
# setting, measured against the fixed setting with perfdoctor verify (the
# figures the rule's thresholds cite; kept in each case's verify.txt).
#
#   gogc-20            GOGC=20, allocation-heavy handler      (must fire)
#   gogc-100           the same at GOGC=100                   (must stay silent)
#   memlimit-below-heap GOMEMLIMIT under the live heap        (must fire)
#   memlimit-generous  GOMEMLIMIT=1GiB over the same heap     (must stay silent)
#   cache-disabled     -disable-cache over a costly render     (must fire)
#   debug-logging      -log-level debug, to a file            (must fire)
#
# Usage: record.sh [CASE...] (all when none given).
source "$(dirname "$0")/../../../corpus/lib.sh"
HERE=$(cd "$(dirname "$0")" && pwd)
pd_build
WORK=$(mktemp -d)
(cd "$HERE/svc" && go build -o "$WORK/svc" .)

# start PORT PPROF ENV... -- FLAGS...: svc on PORT with the environment and flags given.
start() {
	local port=$1 pprof=$2 envs=()
	shift 2
	while [ $# -gt 0 ] && [ "$1" != "--" ]; do envs+=("$1"); shift; done
	shift
	bg env "${envs[@]}" "$WORK/svc" -listen "127.0.0.1:$port" -pprof "127.0.0.1:$pprof" "$@"
	wait_port "$port"
	wait_port "$pprof"
}

# record CASE ENV... -- FLAGS...: a bundle of svc so started under load.
record() {
	local name=$1 port pprof
	shift
	port=$(free_port)
	pprof=$(free_port)
	start "$port" "$pprof" "$@"
	"$PD" run --target "http://127.0.0.1:$pprof" --load "http://127.0.0.1:$port/item?id=7" \
		-c 8 --warmup 3s -d 15s -o "$WORK/run-$name" >"$WORK/run-$name.txt"
	keep_bundle "$WORK/run-$name" "$HERE/$name"
	rm -f "$HERE/$name/trace.out" # the execution trace is what this rule does not read, and most of the bytes
	stop_started
}

# measure CASE BAD_ENV... -- BAD_FLAGS... ++ GOOD_ENV... -- GOOD_FLAGS...: verify, bad before fixed.
measure() {
	local name=$1 bad=() good=() bp bq gp gq
	shift
	while [ "$1" != "++" ]; do bad+=("$1"); shift; done
	shift
	good=("$@")
	bp=$(free_port); bq=$(free_port); gp=$(free_port); gq=$(free_port)
	start "$bp" "$bq" "${bad[@]}"
	start "$gp" "$gq" "${good[@]}"
	"$PD" verify --before "http://127.0.0.1:$bp/item?id=7" --after "http://127.0.0.1:$gp/item?id=7" \
		-c 8 --rounds 4 -d 4s --out "$WORK/verify-$name" >"$HERE/$name/verify.txt"
	stop_started
}

cases=("$@")
[ ${#cases[@]} -eq 0 ] && cases=(gogc-20 gogc-100 memlimit-below-heap memlimit-generous cache-disabled debug-logging)
cpu_lock
wait_idle 60
for c in "${cases[@]}"; do
	case $c in
	gogc-20)
		record gogc-20 GOGC=20 -- -live-mb 16
		measure gogc-20 GOGC=20 -- -live-mb 16 ++ GOGC=100 -- -live-mb 16 ;;
	gogc-100) record gogc-100 GOGC=100 -- -live-mb 16 ;;
	memlimit-below-heap)
		record memlimit-below-heap GOMEMLIMIT=48MiB -- -live-mb 48
		measure memlimit-below-heap GOMEMLIMIT=48MiB -- -live-mb 48 ++ GOMEMLIMIT=1GiB -- -live-mb 48 ;;
	memlimit-generous) record memlimit-generous GOMEMLIMIT=1GiB -- -live-mb 48 ;;
	cache-disabled)
		# An answer costs 5000 hashing rounds to render (what a cache is
		# for); the handler's other work is 200 objects a request.
		record cache-disabled GOGC=100 -- -disable-cache -rounds 5000 -objects 200
		measure cache-disabled GOGC=100 -- -disable-cache -rounds 5000 -objects 200 ++ GOGC=100 -- -rounds 5000 -objects 200 ;;
	debug-logging)
		record debug-logging GOGC=100 -- -log-level debug -log-file "$WORK/svc.log"
		measure debug-logging GOGC=100 -- -log-level debug -log-file "$WORK/svc.log" ++ GOGC=100 -- -log-file "$WORK/svc.log" ;;
	*) echo "record.sh: unknown case $c" >&2; exit 2 ;;
	esac
done
rm -rf "$WORK"
