#!/usr/bin/env bash
# Records pool001's cases from services written for them: poolsvc (Go:
# database/sql with pgx against a private PostgreSQL, net/http's client
# with a per-host limit, a channel used as a semaphore) and Orders.java (a
# hand-made worker pool and a hand-made connection pool), each bounded too
# small (the bad case) and sized right, under a closed loop of 32
# connections recorded with perfdoctor run. Each pair's gain is measured
# with perfdoctor verify into the bad case's verify.json.
#
# Usage: record.sh [CASE...]   (default: every case; needs root for the
# PostgreSQL cluster, a JDK 17 and the async-profiler cache)
source "$(dirname "$0")/../../../corpus/lib.sh"
HERE=$(cd "$(dirname "$0")" && pwd)
W=$(mktemp -d)
chmod 755 "$W" # the PostgreSQL cluster runs as postgres
trap 'stop_started; rm -rf "$W"' EXIT
cases=("$@")
# jvm-executor is not among the kept cases: its worker pool's queue is first
# in, first out, so no request finds a free worker, the fastest request is
# a queued one (283 ms for a 20 ms call) and the load's reading does not see
# the pool (see the rule's report of what is left).
[ ${#cases[@]} -gt 0 ] || cases=(go-sql go-perhost go-chan jvm-connpool)

cpu_lock
pd_build
(cd "$ROOT" && go build -o "$W/poolsvc" ./rules/pool001/testdata/poolsvc)

# record_go NAME PPROF_PORT URL: perfdoctor run against a Go service.
record_go() {
	local tmp
	tmp=$(mktemp -d)
	"$PD" run --target "http://127.0.0.1:$2" --load "$3" -c 32 -d 15s --warmup 3s -o "$tmp" >"$tmp/report.out"
	grep -E '^ *load:|^ *[0-9.]+\. \[' "$tmp/report.out" >&2 || true
	keep_bundle "$tmp" "$HERE/$1"
}

# start_go LOG ARGS...: poolsvc with ARGS; BG_PID is it.
start_go() {
	local log=$1
	shift
	bg "$W/poolsvc" "$@" >"$log" 2>&1
}

# measure NAME BAD_URL FIXED_URL: perfdoctor verify of the bad side
# against the right-sized one, into NAME's verify.json.
measure() {
	local tmp
	tmp=$(mktemp -d)
	"$PD" verify --before "$2" --after "$3" --out "$tmp" -c 32 -d 8s --rounds 4 --warmup 2s >&2 || [ $? -eq 4 ]
	cp "$tmp/verify.json" "$HERE/$1/verify.json"
	rm -rf "$tmp"
}

go_pair() { # NAME BAD_ARGS FIXED_ARGS PATH (args space-separated)
	local name=$1 bad_args=$2 fix_args=$3 path=$4 bp bpp fp fpp
	bp=$(free_port) bpp=$(free_port) fp=$(free_port) fpp=$(free_port)
	# shellcheck disable=SC2086
	start_go "$W/$name-bad.log" -listen "127.0.0.1:$bp" -pprof "127.0.0.1:$bpp" $bad_args
	# shellcheck disable=SC2086
	start_go "$W/$name-fixed.log" -listen "127.0.0.1:$fp" -pprof "127.0.0.1:$fpp" $fix_args
	wait_port "$bp" && wait_port "$fp" && wait_port "$bpp" && wait_port "$fpp"
	record_go "$name-bad" "$bpp" "http://127.0.0.1:$bp$path"
	record_go "$name-right" "$fpp" "http://127.0.0.1:$fp$path"
	measure "$name-bad" "http://127.0.0.1:$bp$path" "http://127.0.0.1:$fp$path"
}

backend() { # starts the 20 ms dependency once; BACKEND is its URL
	[ -n "${BACKEND:-}" ] && return 0
	local p
	p=$(free_port)
	start_go "$W/backend.log" -serve-backend "127.0.0.1:$p" -delay 20ms
	wait_port "$p"
	BACKEND="http://127.0.0.1:$p/price"
}

database() { # a private PostgreSQL with find_item(id), 20 ms a call; DSN is it
	[ -n "${DSN:-}" ] && return 0
	local p
	p=$(free_port)
	pg_start "$W/pgdata" "$p"
	psql_run "$p" postgres -c "create database items"
	psql_run "$p" items <<SQL
create table items (id bigint primary key, name text not null, price numeric(10,2) not null);
insert into items select i, 'item ' || i, (i % 1000) / 10.0 from generate_series(1, 10000) i;
create function find_item(bigint) returns setof items language sql as \$\$
  select pg_sleep(0.02);
  select * from items where id = \$1;
\$\$;
SQL
	DSN="postgres://postgres@127.0.0.1:$p/items?sslmode=disable"
}

# jvm_pair NAME MODE BAD_N: Orders in MODE with BAD_N against 64, each
# recorded with perfdoctor run --jvm (async-profiler and JFR, as the
# corpus records JVMs), and the gain measured.
jvm_pair() {
	local name=$1 mode=$2 n=$3 bport bad fix bad_url fix_url
	if [ -z "${JAVA_CLASSES:-}" ]; then
		JAVA_CLASSES="$W/classes"
		javac -d "$JAVA_CLASSES" "$HERE/jvm/Orders.java"
	fi
	bport=$(free_port)
	bg java -Xmx128m -cp "$JAVA_CLASSES" perfdoctor.fixtures.Orders backend "$bport" >"$W/$name-backend.log" 2>&1
	wait_port "$bport"
	bg java -Xmx256m -cp "$JAVA_CLASSES" perfdoctor.fixtures.Orders "$mode" "$n" "$bport" >"$W/$name-bad.log" 2>&1
	bad=$BG_PID
	bg java -Xmx256m -cp "$JAVA_CLASSES" perfdoctor.fixtures.Orders "$mode" 64 "$bport" >"$W/$name-fixed.log" 2>&1
	fix=$BG_PID
	for _ in $(seq 100); do
		grep -q '^app=' "$W/$name-bad.log" && grep -q '^app=' "$W/$name-fixed.log" && break
		sleep 0.2
	done
	bad_url=$(sed -n 's/^app=//p' "$W/$name-bad.log")
	fix_url=$(sed -n 's/^app=//p' "$W/$name-fixed.log")
	warm "$bad_url" 5 -c 32
	warm "$fix_url" 5 -c 32
	jvm_record "$bad" "$bad_url" "$HERE/$name-bad" 15 -c 32 --warmup 3s
	jvm_record "$fix" "$fix_url" "$HERE/$name-right" 15 -c 32 --warmup 3s
	measure "$name-bad" "$bad_url" "$fix_url"
}

for c in "${cases[@]}"; do
	case $c in
	go-sql)
		database
		go_pair go-sql "-db $DSN -max-open 1" "-db $DSN -max-open 64" /items/5
		;;
	go-perhost)
		backend
		go_pair go-perhost "-backend $BACKEND -per-host 2" "-backend $BACKEND" /quote
		;;
	go-chan)
		backend
		go_pair go-chan "-backend $BACKEND -limit 2" "-backend $BACKEND -limit 64" /quote
		;;
	jvm-executor)
		jvm_pair jvm-executor workers 2
		;;
	jvm-connpool)
		jvm_pair jvm-connpool connections 2
		;;
	*)
		echo "unknown case $c" >&2
		exit 2
		;;
	esac
done
