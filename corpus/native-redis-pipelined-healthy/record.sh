#!/usr/bin/env bash
# Healthy: Debian's redis-server 7.0 as a cache (no persistence) taking
# pipelined GETs and SETs (redis-benchmark -P 16, 50 connections, 100-byte
# values over 100,000 keys): its one thread saturated doing commands, the
# other core running the benchmark. The plausible change measured:
# `io-threads 2` (threaded socket reads and writes), which has no core to
# run on here.
source "$(dirname "$0")/../lib.sh"
apt_need redis-server redis-tools
scenario_init

BAD=$(free_port)
redis_start "$BAD" "$W/bad"
BAD_PID=$BG_PID
ALT=$(free_port)
redis_start "$ALT" "$W/alt" 'io-threads 2' 'io-threads-do-reads yes'

# One run: 200,000 SETs then 200,000 GETs, 16 commands per round trip.
N=400000
LOAD='redis-benchmark -h {host} -p {port} -t set,get -n 200000 -c 50 -P 16 -d 100 -r 100000 -q'
measure_cmd "$BAD_PID" "$BAD" "$ALT" "$HERE" "$N" command "$LOAD"
