#!/usr/bin/env bash
# Healthy: a standalone ZooKeeper 3.9 server (default settings, 512 MB heap)
# holding 2,000 small znodes (200 bytes: configuration and membership data)
# read by 32 client sessions with getData, saturated on the machine's two
# cores shared with the clients. The plausible change measured is more
# NIO worker threads (zookeeper.nio.numWorkerThreads 4 -> 32), which should
# change nothing: the CPUs are the limit.
source "$(dirname "$0")/../lib.sh"
source "$CORPUS/jvm-apps/zookeeper/zookeeper.sh"
source "$CORPUS/jvm-apps/loaders/loaders.sh"
scenario_init
JAVA=$(jdk_home 17)
ZKCP=$(zk_cp "$W")
CP=$(loaders_cp "$W")
N=2000

rm -rf "$W/zk" "$W/zk-alt"
BAD=$(free_port)
zk_start "$JAVA" "$ZKCP" "$W/zk" "$BAD" -Xms512m -Xmx512m
BAD_PID=$BG_PID
ALT=$(free_port)
zk_start "$JAVA" "$ZKCP" "$W/zk-alt" "$ALT" -Xms512m -Xmx512m -Dzookeeper.nio.numWorkerThreads=32
ALT_PID=$BG_PID
for p in "$BAD" "$ALT"; do
	"$JAVA/bin/java" -cp "$CP" corpus.load.Zk populate --server "127.0.0.1:$p" --znodes "$N" --size 200
done

# The load: 32 ZooKeeper sessions (kept by the load agent between runs),
# each reading random znodes; a run is 20,000 reads.
loaders_agent "$JAVA" "$CP" "$W/agent.log"
LOAD="curl -fsS 'http://127.0.0.1:$AGENT_PORT/zk-get?server={host}:{port}&znodes=$N&clients=32&units=20000'"
jvm_record_cmd "$BAD_PID" "$BAD" "$HERE/bad" 20 20000 getData "$LOAD"
pd_verify_cmd "$BAD" "$ALT" "$HERE" 20000 getData "$LOAD" -d 10s --rounds 6 --warmup 2s
set_measured "$HERE" throughput
