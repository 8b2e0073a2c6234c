#!/usr/bin/env bash
# A standalone ZooKeeper 3.9 server whose heap (-Xmx160m) is tight for its
# data (100,000 znodes of 1 KB, about 140 MB live) while 32 sessions write:
# setData of 1 KB on random znodes, ZooKeeper's defaults otherwise (forceSync
# on: each batch of transactions is fsynced to the log; a snapshot every
# 50,000 to 100,000 transactions). Every write replaces a znode's byte[] that
# has long lived in the old generation, so G1 has to reclaim old regions, not
# only mark them. The change measured is a heap with room for the live set
# (-Xmx1g, ZooKeeper's own scripts' default).
source "$(dirname "$0")/../lib.sh"
source "$CORPUS/jvm-apps/zookeeper/zookeeper.sh"
source "$CORPUS/jvm-apps/loaders/loaders.sh"
scenario_init
JAVA=$(jdk_home 25)
ZKCP=$(zk_cp "$W")
CP=$(loaders_cp "$W")
N=100000

# The data, written once through a server with room to spare, then copied
# into each side's data directory.
zk_seed "$JAVA" "$ZKCP" "$CP" "$W" "$N" 1024 "$W/zk-bad" "$W/zk-fixed"
BAD=$(free_port)
zk_start "$JAVA" "$ZKCP" "$W/zk-bad" "$BAD" -Xmx160m
BAD_PID=$BG_PID
FIX=$(free_port)
zk_start "$JAVA" "$ZKCP" "$W/zk-fixed" "$FIX" -Xmx1g
FIX_PID=$BG_PID

# Each side's collector logs to the scratch directory (switched on through
# jcmd, so the command line the bundle records stays the operator's): the
# notes' collection counts by type and occupancy after collection come
# from these logs, which the bundle does not hold.
for side in bad:$BAD_PID fixed:$FIX_PID; do
	rm -f "$W/gc-${side%%:*}.log"
	"$JAVA/bin/jcmd" "${side#*:}" VM.log output="file=$W/gc-${side%%:*}.log" what='gc*=info' decorators=utctime,uptime >/dev/null
done

# The load: 32 ZooKeeper sessions (kept by the load agent between runs),
# each writing 1 KB to random znodes; a run is UNITS writes.
UNITS=5000
loaders_agent "$JAVA" "$CP" "$W/agent.log"
LOAD="curl -fsS 'http://127.0.0.1:$AGENT_PORT/zk-set?server={host}:{port}&znodes=$N&size=1024&clients=32&units=$UNITS'"
jvm_record_cmd "$BAD_PID" "$BAD" "$HERE/bad" 20 "$UNITS" setData "$LOAD"
pd_verify_cmd "$BAD" "$FIX" "$HERE" "$UNITS" setData "$LOAD" -d 10s --rounds 6 --warmup 2s
set_measured "$HERE" throughput
