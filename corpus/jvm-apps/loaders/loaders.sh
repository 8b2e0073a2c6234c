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
