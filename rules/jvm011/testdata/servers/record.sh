#!/usr/bin/env bash
# Records the executor fixtures of JVM011 from Servers.java: each server
# runs on JDK 17 beside a downstream JVM ("backend", 20 ms a reply), wrk
# drives 32 keep-alive connections at it, and after a warm-up the server is
# recorded for 10 s the way perfdoctor collect --jfr records (JFR.start with
# the profile settings, thread CPU and context switches each second). The
# recording keeps only the events the thread rules read, gzipped. The JDK's
# HttpServer answers with TCP_NODELAY (sun.net.httpserver.nodelay), else its
# small replies wait 40 ms for delayed ACKs and hide the pools' own waits.
# Jetty and Netty come from Maven with mvn. Usage: record.sh [MODE...]
# Take the CPU lock around it: the figures are measurements.
set -euo pipefail
cd "$(dirname "$0")"
here=$(pwd)
java17=${JAVA17:-/usr/lib/jvm/java-17-openjdk-amd64}
java25=${JAVA25:-/usr/lib/jvm/temurin-25-jdk-amd64}
events=jdk.ExecutionSample,jdk.JavaMonitorEnter,jdk.JavaMonitorWait,jdk.ThreadPark,jdk.ThreadSleep,jdk.SocketRead,jdk.VirtualThreadPinned,jdk.ThreadCPULoad,jdk.CPULoad,jdk.CPUInformation,jdk.JVMInformation,jdk.JavaThreadStatistics,jdk.ThreadStart,jdk.ThreadContextSwitchRate
modes=("$@")
[ ${#modes[@]} -gt 0 ] || modes=(jetty-small jetty-right netty-block netty-offload tpe-small tpe-right handmade-small handmade-right cpu)
work=$(mktemp -d)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	rm -rf "$work"
}
trap cleanup EXIT

for gav in org.eclipse.jetty:jetty-server:12.0.16 org.eclipse.jetty:jetty-http:12.0.16 org.eclipse.jetty:jetty-io:12.0.16 \
	org.eclipse.jetty:jetty-util:12.0.16 org.slf4j:slf4j-api:2.0.16 io.netty:netty-transport:4.1.130.Final \
	io.netty:netty-buffer:4.1.130.Final io.netty:netty-common:4.1.130.Final io.netty:netty-resolver:4.1.130.Final; do
	mvn -q -B dependency:copy -Dartifact="$gav" -DoutputDirectory="$work/lib" >&2
done
cp="$work/classes:$(find "$work/lib" -name '*.jar' | sort | paste -sd:)"
"$java17/bin/javac" -d "$work/classes" -cp "$cp" Servers.java

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_port() { for _ in $(seq 100); do (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return; sleep 0.1; done; echo "port $1 never opened" >&2; exit 1; }

backend=$(free_port)
"$java17/bin/java" -Dsun.net.httpserver.nodelay=true -cp "$cp" perfdoctor.fixtures.Servers backend "$backend" >"$work/backend.log" 2>&1 &
pids+=($!)
wait_port "$backend"

for m in "${modes[@]}"; do
	port=$(free_port)
	"$java17/bin/java" -Xmx256m -Dsun.net.httpserver.nodelay=true -cp "$cp" perfdoctor.fixtures.Servers "$m" "$port" "$backend" >"$work/$m.log" 2>&1 &
	pid=$!
	pids+=("$pid")
	wait_port "$port"
	wrk -c 32 -t 2 -d 3s "http://127.0.0.1:$port/" >/dev/null
	"$java17/bin/jcmd" "$pid" JFR.start name=fixture settings=profile jdk.ThreadCPULoad#period=1s \
		jdk.ThreadContextSwitchRate#period=1s >/dev/null
	echo "== $m"
	wrk -c 32 -t 2 -d 10s --latency "http://127.0.0.1:$port/" | grep -E 'Latency|50%|99%|Requests/sec'
	"$java17/bin/jcmd" "$pid" JFR.stop name=fixture filename="$work/$m.jfr" >/dev/null
	kill "$pid"
	wait "$pid" 2>/dev/null || true
	"$java25/bin/jfr" scrub --include-events "$events" "$work/$m.jfr" "$work/$m-kept.jfr" >/dev/null
	gzip -9 -c "$work/$m-kept.jfr" >"$here/$m.jfr.gz"
	echo "$m.jfr.gz: $(stat -c %s "$here/$m.jfr.gz") bytes"
done
