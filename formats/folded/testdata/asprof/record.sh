#!/bin/sh
# Records work.collapsed: async-profiler 4.6 (the jar scripts/test.sh
# fetches from Maven Central) as a JVM agent on Debian's JDK 17, CPU
# samples every 10 ms, frame kinds annotated (ann: _[j] JIT, _[i] inlined,
# _[0] interpreted, _[1] C1, _[k] kernel), method signatures kept (sig).
set -eu
cd "$(dirname "$0")"
jar=${ASYNC_PROFILER_JAR:-$HOME/.cache/perfdoctor/maven/async-profiler-4.6.jar}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
unzip -q -j "$jar" linux-x64/libasyncProfiler.so -d "$tmp"
javac -d "$tmp" Work.java
java -agentpath:"$tmp/libasyncProfiler.so=start,event=cpu,interval=10ms,ann,sig,file=$PWD/work.collapsed,collapsed" -cp "$tmp" Work 2500
