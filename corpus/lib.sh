# Shared by every scenario's record.sh: source it, then call these.
# Everything binds to 127.0.0.1; only processes started here are stopped, by
# their own process group.
set -euo pipefail

CORPUS=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(dirname "$CORPUS")
STARTED=()

# pd_build builds perfdoctor from this checkout once per script into $PD
# (or uses $PD when the caller set it).
pd_build() {
	if [ -z "${PD:-}" ]; then
		PD="$(mktemp -d)/perfdoctor"
		(cd "$ROOT" && go build -o "$PD" ./cmd/perfdoctor)
	fi
	export PD
}

# cpu_lock holds the machine's CPU lock until the script exits: recordings
# and measurements must not share the two cores with each other.
cpu_lock() {
	exec 9>"${PERFDOCTOR_CPU_LOCK:-/tmp/perfdoctor-cpu.lock}"
	flock 9
}

# free_port prints a TCP port free on 127.0.0.1.
free_port() {
	python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# wait_port PORT [SECONDS]: until 127.0.0.1:PORT accepts connections.
wait_port() {
	local port=$1 limit=${2:-60} i
	for ((i = 0; i < limit * 10; i++)); do
		if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
			return 0
		fi
		sleep 0.1
	done
	echo "127.0.0.1:$port did not accept connections within ${limit}s" >&2
	return 1
}

# bg CMD...: starts CMD in a process group of its own and sets BG_PID to
# its PID (call it directly, not in $(...), so the shell remembers it);
# stop_started (run at exit) stops every group started so.
bg() {
	setsid "$@" </dev/null &
	BG_PID=$!
	STARTED+=("$BG_PID")
}

stop_started() {
	local pid
	for pid in "${STARTED[@]}"; do
		kill -TERM -- "-$pid" 2>/dev/null || true
	done
	for pid in "${STARTED[@]}"; do
		for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
		kill -KILL -- "-$pid" 2>/dev/null || true
	done
	STARTED=()
}
trap stop_started EXIT

# trim_bundle DIR: gzips every file over 64 KiB that is not compressed yet
# (perfdoctor recognises files by content, gzipped or not), so the corpus
# stays small.
trim_bundle() {
	local f
	find "$1" -type f -size +64k | while read -r f; do
		if [ "$(head -c2 "$f" | od -An -tx1 | tr -d ' ')" != "1f8b" ]; then
			gzip -9 -n "$f" && mv "$f.gz" "$f"
		fi
	done
}

# keep_bundle RUNDIR DEST: moves perfdoctor run's bundle (RUNDIR/bundle)
# to DEST, trimmed, and drops the reports (the test diagnoses afresh).
keep_bundle() {
	rm -rf "$2"
	mv "$1/bundle" "$2"
	rm -rf "$1"
	trim_bundle "$2"
}
