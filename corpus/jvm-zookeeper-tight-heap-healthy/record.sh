#!/usr/bin/env bash
# A standalone ZooKeeper 3.9 server whose heap (-Xmx160m) is tight for its
# data: 100,000 znodes of 1 KB, about 140 MB live, so G1 runs marking cycle
# after cycle over a nearly full old generation while 32 sessions read. The
# change measured is a heap with room for the live set (-Xmx1g, ZooKeeper's
# own scripts' default), which an operator would try first. Measured: no
# significant gain for this read load, so the scenario is a healthy one.
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

# The load: 32 ZooKeeper sessions (kept by the load agent between runs),
# each reading random znodes; a run is 20,000 reads.
loaders_agent "$JAVA" "$CP" "$W/agent.log"
LOAD="curl -fsS 'http://127.0.0.1:$AGENT_PORT/zk-get?server={host}:{port}&znodes=$N&clients=32&units=20000'"
jvm_record_cmd "$BAD_PID" "$BAD" "$HERE/bad" 20 20000 getData "$LOAD"
pd_verify_cmd "$BAD" "$FIX" "$HERE" 20000 getData "$LOAD" -d 10s --rounds 6 --warmup 2s
set_measured "$HERE" throughput
