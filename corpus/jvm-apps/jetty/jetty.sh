# Shared by the scenarios on Jetty's distribution (jetty-home from Maven):
# source after ../../lib.sh.
JETTY_VERSION=${JETTY_VERSION:-12.0.16}

# jetty_home WORK: jetty-home fetched with mvn and unpacked in WORK; prints
# its directory.
jetty_home() {
	mvn_unpack "org.eclipse.jetty:jetty-home:$JETTY_VERSION:tar.gz" "$1" "jetty-home-$JETTY_VERSION"
}

# jetty_base HOME BASE MODULES: a fresh jetty.base with the modules given
# (comma separated), as an operator makes one with start.jar --add-modules.
jetty_base() {
	local home=$1 base=$2 modules=$3
	rm -rf "$base"
	mkdir -p "$base"
	(cd "$base" && java -jar "$home/start.jar" jetty.home="$home" jetty.base="$base" --add-modules="$modules" >/dev/null 2>&1)
}

# jetty_start JAVA_HOME HOME BASE PORT LOG [PROPERTY=VALUE... | -JVMOPT...]:
# Jetty on 127.0.0.1:PORT in this JVM (no forked child); BG_PID is the JVM.
jetty_start() {
	local java=$1 home=$2 base=$3 port=$4 log=$5 a
	shift 5
	local jvm=() props=()
	for a in "$@"; do
		case $a in
		-*) jvm+=("$a") ;;
		*) props+=("$a") ;;
		esac
	done
	bg "$java/bin/java" "${jvm[@]}" -jar "$home/start.jar" jetty.home="$home" jetty.base="$base" \
		jetty.http.host=127.0.0.1 jetty.http.port="$port" "${props[@]}" >"$log" 2>&1
	wait_port "$port" 60
}
