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

# zk_seed JAVA_HOME CLASSPATH LOADERS_CP WORK ZNODES SIZE DIR...: ZNODES
# znodes of SIZE bytes written once through a server with room to spare
# (WORK/seed, kept between runs: writing them takes minutes), then its data
# copied into each DIR (emptied first), for zk_start to serve.
zk_seed() {
	local java=$1 cp=$2 loaders=$3 work=$4 n=$5 size=$6 port d
	shift 6
	if [ ! -d "$work/seed/data/version-2" ]; then
		rm -rf "$work/seed"
		port=$(free_port)
		zk_start "$java" "$cp" "$work/seed" "$port" -Xmx1g
		"$java/bin/java" -cp "$loaders" corpus.load.Zk populate --server "127.0.0.1:$port" --znodes "$n" --size "$size"
		stop_bg "$BG_PID"
	fi
	for d in "$@"; do
		rm -rf "$d"
		mkdir -p "$d"
		cp -r "$work/seed/data" "$d/"
	done
}
