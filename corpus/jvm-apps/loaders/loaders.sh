# The corpus's load drivers for servers that do not speak HTTP (ZooKeeper,
# JDBC, JMS): source after ../../lib.sh.
LOADERS_SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

# loaders_cp WORK: builds the drivers with Maven in WORK/loaders (a copy of
# the source) and prints their classpath.
loaders_cp() {
	local build="$1/loaders"
	mkdir -p "$build"
	cp -r "$LOADERS_SRC/pom.xml" "$LOADERS_SRC/src" "$build/"
	mvn -q -B -f "$build/pom.xml" package dependency:copy-dependencies -DoutputDirectory="$build/target/lib" >&2
	echo "$build/target/loaders.jar:$build/target/lib/*"
}

# loaders_agent JAVA_HOME CLASSPATH LOG: the drivers as a load agent that
# stays up (corpus.load.Agent) on a free port, set in AGENT_PORT (call it
# directly, not in $(...), so its process is stopped at exit); a load
# command is then a curl of http://127.0.0.1:AGENT_PORT/MODE?units=N&...,
# so each run costs its units and not a client JVM's start-up.
loaders_agent() {
	local java=$1 cp=$2 log=$3
	AGENT_PORT=$(free_port)
	bg "$java/bin/java" -Xmx512m -cp "$cp" corpus.load.Agent --port "$AGENT_PORT" >"$log" 2>&1
	wait_port "$AGENT_PORT" 30
}
