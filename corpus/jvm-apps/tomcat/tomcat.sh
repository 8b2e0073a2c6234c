# Shared by the scenarios on Tomcat's distribution (fetched with mvn):
# source after ../../lib.sh.
TOMCAT_VERSION=${TOMCAT_VERSION:-11.0.24}

# tomcat_home WORK: the distribution fetched with mvn and unpacked in WORK;
# prints its directory (CATALINA_HOME).
tomcat_home() {
	mvn_unpack "org.apache.tomcat:tomcat:$TOMCAT_VERSION:tar.gz" "$1" "apache-tomcat-$TOMCAT_VERSION"
}

# tomcat_base HOME BASE PORT [CONNECTOR-ATTRIBUTES]: a CATALINA_BASE with
# the distribution's own configuration and ROOT webapp, its HTTP connector
# on 127.0.0.1:PORT with the attributes given added (e.g.
# 'maxKeepAliveRequests="1"'), the shutdown port off.
tomcat_base() {
	local home=$1 base=$2 port=$3 attrs=${4:-}
	rm -rf "$base"
	mkdir -p "$base"/{logs,temp,work,webapps}
	cp -r "$home/conf" "$base/"
	cp -r "$home/webapps/ROOT" "$base/webapps/"
	python3 - "$base/conf/server.xml" "$port" "$attrs" <<'PY'
import sys
path, port, attrs = sys.argv[1:]
s = open(path).read()
old = '<Connector port="8080" protocol="HTTP/1.1"'
assert s.count(old) == 1, "server.xml: the HTTP connector is not where the distribution puts it"
s = s.replace(old, f'<Connector port="{port}" address="127.0.0.1" protocol="HTTP/1.1" {attrs}'.rstrip())
s = s.replace('<Server port="8005"', '<Server port="-1"')
open(path, "w").write(s)
PY
}

# tomcat_start JAVA_HOME HOME BASE PORT [JVM-OPTIONS...]: Tomcat started as
# catalina.sh run does, in this JVM; BG_PID is the JVM.
tomcat_start() {
	local java=$1 home=$2 base=$3 port=$4
	shift 4
	# the module openings catalina.sh passes on a modern JDK
	bg "$java/bin/java" "$@" \
		--add-opens=java.base/java.lang=ALL-UNNAMED --add-opens=java.base/java.io=ALL-UNNAMED \
		--add-opens=java.base/java.util=ALL-UNNAMED --add-opens=java.base/java.util.concurrent=ALL-UNNAMED \
		--add-opens=java.rmi/sun.rmi.transport=ALL-UNNAMED \
		-Djava.util.logging.config.file="$base/conf/logging.properties" \
		-Djava.util.logging.manager=org.apache.juli.ClassLoaderLogManager \
		-Dcatalina.home="$home" -Dcatalina.base="$base" -Djava.io.tmpdir="$base/temp" \
		-cp "$home/bin/bootstrap.jar:$home/bin/tomcat-juli.jar" \
		org.apache.catalina.startup.Bootstrap start >"$base/logs/console.log" 2>&1
	wait_port "$port" 60
}
