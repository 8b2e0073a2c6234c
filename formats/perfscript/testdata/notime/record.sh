#!/bin/sh
# Records the perf script files of this directory with Linux perf 6.1
# (Debian 12's linux-perf) on funcab.c: sample headers printed without a
# timestamp, as brendangregg/FlameGraph's test inputs are (perf script
# -F with no time field). Run as root, under the CPU lock.
set -eu
cd "$(dirname "$0")"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cc -O0 -fno-omit-frame-pointer -o "$tmp/func_ab" funcab.c
# One on-CPU event, header "comm pid event:" (no period, no time).
perf record -q -F 499 -g -o "$tmp/cpu.data" "$tmp/func_ab" 8 >/dev/null
perf script -i "$tmp/cpu.data" -F comm,pid,event,ip,sym,dso > funcab-pid.txt
# The thread id alone and the period, still no time: "comm tid period event:".
perf script -i "$tmp/cpu.data" -F comm,tid,period,event,ip,sym,dso > funcab-tid-period.txt
# Two events in one file, no time: the user picks one with --perf-event.
perf record -q -F 499 -e cpu-clock -e page-faults -g -o "$tmp/multi.data" "$tmp/func_ab" 8 >/dev/null
perf script -i "$tmp/multi.data" -F comm,pid,tid,event,ip,sym,dso > multi-event-notime.txt
# perf's own collapse of each recording, the oracle for the stacks.
collapse=$(ls /usr/lib*/perf-core/scripts/python/stackcollapse.py | head -1)
perf script -i "$tmp/cpu.data" -s "$collapse" 2>/dev/null > funcab.stackcollapse
perf script -i "$tmp/multi.data" -s "$collapse" 2>/dev/null > multi-event-notime.stackcollapse
sed -i "s#$tmp/##g" *.txt *.stackcollapse
