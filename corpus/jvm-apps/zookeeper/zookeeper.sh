# Shared by the ZooKeeper scenarios: source after ../../lib.sh.
ZK_SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

# zk_cp WORK: the server's jars (the release and what its distribution
# ships beside it) copied by Maven into WORK/zk-lib; prints the classpath.
zk_cp() {
	mvn_classpath "$ZK_SRC" "$1/zk-lib"
}

# zk_start JAVA_HOME CLASSPATH DIR PORT [JVM-OPTIONS...]: a standalone
# server on 127.0.0.1:PORT with its data (and log) in DIR, configured as
# zoo_sample.cfg is, plus any DIR/extra.cfg lines; BG_PID is the JVM.
zk_start() {
	local java=$1 cp=$2 dir=$3 port=$4
	shift 4
	mkdir -p "$dir/data"
	{
		echo "tickTime=2000"
		echo "initLimit=10"
		echo "syncLimit=5"
		echo "dataDir=$dir/data"
		echo "clientPort=$port"
		echo "clientPortAddress=127.0.0.1"
		echo "maxClientCnxns=0"
		echo "admin.enableServer=false"
		[ -f "$dir/extra.cfg" ] && cat "$dir/extra.cfg"
	} >"$dir/zoo.cfg"
	bg "$java/bin/java" "$@" -Dzookeeper.log.dir="$dir" -Dlogback.configurationFile="$ZK_SRC/logback.xml" \
		-cp "$cp" org.apache.zookeeper.server.ZooKeeperServerMain "$dir/zoo.cfg" >"$dir/console.log" 2>&1
	wait_port "$port" 60
}
