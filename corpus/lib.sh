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
	CPU_LOCK_HELD=1
}

# wait_idle [SECONDS]: after cpu_lock, waits (at most SECONDS, default 180)
# until the machine's CPUs are idle (under 15% busy over 3 s, not counting
# the processes this script started) so the recording does not share the
# cores with work that ignores the lock; says so when they never were.
wait_idle() {
	local limit=${1:-180} start=$SECONDS busy
	while :; do
		busy=$(python3 - "${STARTED[@]}" <<'PY'
import os, sys, time
groups = {int(g) for g in sys.argv[1:]}
def ours():
    t = 0
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            f = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(f[2]) in groups:
            t += int(f[11]) + int(f[12])
    return t
def snap():
    f = [int(x) for x in open("/proc/stat").readline().split()[1:]]
    return sum(f), f[3] + f[4], ours()
t0, i0, o0 = snap(); time.sleep(3); t1, i1, o1 = snap()
print(round(100 * ((t1 - t0) - (i1 - i0) - (o1 - o0)) / max(1, t1 - t0)))
PY
)
		[ "$busy" -lt 15 ] && return 0
		if ((SECONDS - start >= limit)); then
			echo "warning: the CPUs are still ${busy}% busy with work outside this recording; the figures will be noisy" >&2
			return 0
		fi
		sleep 5
	done
}

# cpu_unlock lets others have the cores between two measured steps.
cpu_unlock() {
	flock -u 9
	CPU_LOCK_HELD=
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

# CORPUS_CACHE holds what the scripts install outside the package manager
# (Go commands built from the module proxy), kept between runs.
CORPUS_CACHE=${PERFDOCTOR_CORPUS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/perfdoctor-corpus}

# apt_need PKG...: installs the Debian packages not installed yet, under the
# machine's apt lock.
apt_need() {
	local missing=() p
	for p in "$@"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
	done
	[ ${#missing[@]} -eq 0 ] && return 0
	flock "${PERFDOCTOR_APT_LOCK:-/tmp/perfdoctor-apt.lock}" \
		apt-get install -y --no-install-recommends "${missing[@]}"
}

# go_install PKG@VERSION: builds a Go command with `go install` once into
# $CORPUS_CACHE/go/ and sets GO_BIN to it. GOTOOLCHAIN is left to the
# caller (auto fetches the Go a module asks for). The build takes the CPU
# lock unless this script holds it already (call it before cpu_lock).
go_install() {
	local spec=$1 dir
	dir="$CORPUS_CACHE/go/${spec//\//_}"
	GO_BIN=$(find "$dir" -maxdepth 1 -type f -perm -u+x 2>/dev/null | head -n1 || true)
	if [ -z "$GO_BIN" ]; then
		mkdir -p "$dir"
		if [ -n "${CPU_LOCK_HELD:-}" ]; then
			go_install_into "$dir" "$spec"
		else
			(cpu_lock && go_install_into "$dir" "$spec")
		fi
		GO_BIN=$(find "$dir" -maxdepth 1 -type f -perm -u+x | head -n1)
	fi
	[ -n "$GO_BIN" ] || { echo "go install $spec left no command in $dir" >&2; return 1; }
}

# go_install_into DIR PKG@VERSION: go install; where the module's go.mod has
# replace directives (go install refuses those), builds the package from a
# throwaway module that requires it instead: the same versions as its go.mod
# requires, without the replacements.
go_install_into() {
	local dir=$1 spec=$2 pkg=${2%@*} name tmp rc=0
	GOBIN=$dir go install "$spec" && return 0
	echo "go install $spec failed; building it from a module that requires it" >&2
	name=$pkg
	[[ $name =~ /v[0-9]+$ ]] && name=${name%/*}
	name=${name##*/}
	tmp=$(mktemp -d)
	(cd "$tmp" && go mod init corpus.invalid/build >/dev/null 2>&1 && go get "$spec" &&
		go build -o "$dir/$name" "$pkg") || rc=$?
	rm -rf "$tmp"
	return $rc
}

# go_built_with BIN: the Go release a binary was built with (go1.19.8).
go_built_with() {
	go version "$1" | awk '{print $NF}'
}

# record_verify VERIFYDIR DEST: keeps verify's verify.json as DEST/verify.json
# and copies its ratios into DEST/scenario.json's "measured" (by stays what
# the scenario says; the date is today's), so the figures always match the
# recording.
record_verify() {
	[ "$1/verify.json" -ef "$2/verify.json" ] || cp "$1/verify.json" "$2/verify.json"
	python3 - "$2/verify.json" "$2/scenario.json" <<'PY'
import datetime, json, sys
v = json.load(open(sys.argv[1]))
path = sys.argv[2]
try:
    s = json.load(open(path))
except FileNotFoundError:
    print(f"{path} is not written yet: write it, then run record_verify again on the kept verify.json", file=sys.stderr)
    sys.exit(0)
m = s.setdefault("measured", {})
names = {"throughput": "throughput", "CPU/request": "cpu_per_unit", "CPU/unit": "cpu_per_unit"}
for r in v.get("ratios", []):
    key = names.get(r["figure"])
    if key:
        m[key] = {"ratio": round(r["ratio"], 4), "lo": round(r["ci95_low"], 4), "hi": round(r["ci95_high"], 4)}
m["rounds"] = len(v.get("rounds", []))
m["date"] = datetime.date.today().isoformat()
with open(path, "w") as f:
    json.dump(s, f, indent=2)
    f.write("\n")
PY
}

# coredns_zone DIR: the zone the CoreDNS scenarios serve (DIR/db.corp.example)
# and the query their clients send for api.corp.example/A, recursion desired
# (DIR/query.bin).
coredns_zone() {
	cat >"$1/db.corp.example" <<'ZONE'
$ORIGIN corp.example.
@	3600 IN SOA ns1 hostmaster 2026112701 7200 3600 1209600 300
	3600 IN NS ns1
ns1	300 IN A 10.0.0.53
api	300 IN A 10.0.1.10
api	300 IN A 10.0.1.11
db	300 IN A 10.0.2.20
ZONE
	python3 -c '
import struct, sys
q = struct.pack(">HHHHHH", 0x2a2a, 0x0100, 1, 0, 0, 0)
q += b"".join(bytes([len(l)]) + l.encode() for l in "api.corp.example".split(".")) + b"\0"
q += struct.pack(">HH", 1, 1)
sys.stdout.buffer.write(q)' >"$1/query.bin"
}

# etcd_start NAME DIR: a single-member etcd serving pprof on its client URL,
# its data in DIR/NAME and its log in DIR/NAME.log (the caller's environment,
# GOGC among it, goes with it); sets PORT.
etcd_start() {
	local peer
	PORT=$(free_port) peer=$(free_port)
	bg etcd --name "$1" --data-dir "$2/$1" --enable-pprof --log-level=error \
		--listen-client-urls "http://127.0.0.1:$PORT" --advertise-client-urls "http://127.0.0.1:$PORT" \
		--listen-peer-urls "http://127.0.0.1:$peer" --initial-advertise-peer-urls "http://127.0.0.1:$peer" \
		--initial-cluster "$1=http://127.0.0.1:$peer" 2>"$2/$1.log"
	wait_port "$PORT"
}

# etcd_preload URL N [VALUE_BYTES]: puts N keys /registry/pods/ns<i%50>/pod-<i>
# (values of VALUE_BYTES, default 256) into the etcd at URL through its JSON
# gateway, 128 puts per transaction (etcd's default --max-txn-ops).
etcd_preload() {
	python3 - "$1" "$2" "${3:-256}" <<'PY'
import base64, json, sys, urllib.request
url, total, size = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
value = base64.b64encode(b"v" * size).decode()
for start in range(0, total, 128):
    ops = [{"requestPut": {"key": base64.b64encode(f"/registry/pods/ns{i % 50}/pod-{i:08d}".encode()).decode(), "value": value}}
           for i in range(start, min(start + 128, total))]
    req = urllib.request.Request(url + "/v3/kv/txn", data=json.dumps({"success": ops}).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req) as r:
        r.read()
PY
}

# request_history START END FORMAT: the metrics scenarios' history, printed:
# http_requests_total for 20 instances x 5 paths x 5 codes, 30 s apart from
# START to END (Unix seconds), each counter growing at a rate of its own
# (seeded: every recording stores the same history). FORMAT: openmetrics
# (promtool's backfill: seconds, with HELP, TYPE and EOF) or import (the
# Prometheus text format with milliseconds, as VictoriaMetrics'
# /api/v1/import/prometheus takes it).
request_history() {
	python3 - "$1" "$2" "$3" <<'PY'
import random, sys
start, end, fmt = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
if fmt not in ("openmetrics", "import"):
    sys.exit(f"request_history: unknown format {fmt}")
scale = 1 if fmt == "openmetrics" else 1000
rng = random.Random(1)
series = [(i, p, c) for i in range(20) for p in ("/", "/api/users", "/api/orders", "/login", "/static") for c in ("200", "201", "304", "404", "500")]
totals = [0] * len(series)
rate = [rng.uniform(0.1, 50) for _ in series]
out = sys.stdout
if fmt == "openmetrics":
    out.write("# HELP http_requests Requests served.\n# TYPE http_requests counter\n")
for t in range(start, end, 30):
    for k, (i, p, c) in enumerate(series):
        totals[k] += int(rate[k] * 30 * rng.uniform(0.8, 1.2))
        out.write(f'http_requests_total{{instance="10.0.0.{i}:9100",job="web",path="{p}",code="{c}"}} {totals[k]} {t * scale}\n')
if fmt == "openmetrics":
    out.write("# EOF\n")
PY
}

# work_dir ID: a scratch directory for one scenario's downloads, builds and
# data (kept between runs so a re-record does not fetch again), printed.
work_dir() {
	local d="${CORPUS_WORK:-/tmp/perfdoctor-corpus}/$1"
	mkdir -p "$d"
	echo "$d"
}

# jdk_home 17|25: the JDK of that feature release on this machine, printed.
# $JDK17_HOME / $JDK25_HOME override where it lives.
jdk_home() {
	local v=$1 d var="JDK${1}_HOME"
	if [ -n "${!var:-}" ]; then echo "${!var}"; return; fi
	for d in /usr/lib/jvm/java-"$v"-openjdk-amd64 /usr/lib/jvm/temurin-"$v"-jdk-amd64 /usr/lib/jvm/java-"$v"-openjdk /usr/lib/jvm/temurin-"$v"-jdk; do
		if [ -x "$d/bin/java" ]; then echo "$d"; return; fi
	done
	echo "no JDK $v under /usr/lib/jvm (set $var)" >&2
	return 1
}

# mvn_fetch GROUP:ARTIFACT:VERSION[:TYPE[:CLASSIFIER]] DESTDIR: Maven's own
# client fetches the artifact (honouring the user's settings.xml mirrors) and
# copies it into DESTDIR; the file's path is printed.
mvn_fetch() {
	local gav=$1 dest=$2
	mkdir -p "$dest"
	mvn -q -B dependency:copy -Dartifact="$gav" -DoutputDirectory="$dest" -Dmdep.overWriteIfNewer=true >&2
	local IFS=: parts
	read -r -a parts <<<"$gav"
	local name="${parts[1]}-${parts[2]}"
	[ -n "${parts[4]:-}" ] && name="$name-${parts[4]}"
	echo "$dest/$name.${parts[3]:-jar}"
}

# mvn_unpack GROUP:ARTIFACT:VERSION:tar.gz WORK DIR: a distribution fetched
# with mvn_fetch and unpacked into WORK once (WORK/DIR is what it unpacks
# to); WORK/DIR is printed.
mvn_unpack() {
	local gav=$1 work=$2 dir=$3 tgz
	if [ ! -d "$work/$dir" ]; then
		tgz=$(mvn_fetch "$gav" "$work/dl")
		tar xzf "$tgz" -C "$work"
	fi
	echo "$work/$dir"
}

# mvn_classpath POMDIR DESTDIR: Maven copies the dependencies of the pom in
# POMDIR into DESTDIR; the classpath (DESTDIR/*) is printed.
mvn_classpath() {
	mkdir -p "$2"
	mvn -q -B -f "$1/pom.xml" dependency:copy-dependencies -DoutputDirectory="$2" -DincludeScope=runtime >&2
	echo "$2/*"
}

# pg_start DATADIR PORT [POSTGRES-ARG...]: a private PostgreSQL cluster (the
# distribution's binaries, run as the postgres user) on 127.0.0.1:PORT,
# socket in DATADIR, with the postgres arguments given (-c name=value).
pg_start() {
	local data=$1 port=$2 bin
	shift 2
	bin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
	if [ ! -f "$data/PG_VERSION" ]; then
		mkdir -p "$data"
		chown postgres: "$data"
		runuser -u postgres -- "$bin/initdb" -D "$data" -A trust -U postgres >/dev/null
	fi
	bg runuser -u postgres -- "$bin/postgres" -D "$data" -p "$port" -k "$data" -c listen_addresses=127.0.0.1 "$@" >"$data.log" 2>&1
	wait_port "$port" 60
}

# psql_run PORT DB SQL...: runs SQL on a cluster started by pg_start.
psql_run() {
	local port=$1 db=$2
	shift 2
	psql -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$port" -U postgres -d "$db" "$@"
}

# jvm_record PID URL DEST SECONDS [RUN-FLAGS...]: perfdoctor run drives
# closed-loop HTTP load at URL (its load flags: -c, -H...) and records the
# JVM's bundle into DEST for SECONDS: async-profiler and JFR (--jvm), or
# JFR alone when $JVM_COLLECT is --jfr. The bundle carries load.json.
jvm_record() {
	local pid=$1 url=$2 dest=$3 secs=$4 tmp
	shift 4
	skip_record "$dest" && return 0
	tmp=$(mktemp -d)
	"$PD" run "${JVM_COLLECT:---jvm}" "$pid" --load "$url" -d "${secs}s" -o "$tmp" "$@" >"$tmp/report.out"
	grep -E '^ *load:|^ *[0-9]+\. \[' "$tmp/report.out" >&2 || true
	keep_bundle "$tmp" "$dest"
}

# skip_record DEST: true (and says so) when CORPUS_VERIFY_ONLY=1 asks to
# re-measure the fix alone: the recordings (jvm_record, pd_record) then
# keep the bundle DEST as it is, and only verify runs again.
skip_record() {
	[ "${CORPUS_VERIFY_ONLY:-}" = 1 ] || return 1
	echo "CORPUS_VERIFY_ONLY=1: keeping $1 as recorded" >&2
}

# pd_verify BEFORE_URL AFTER_URL SCENARIO_DIR [VERIFY-FLAGS...]: perfdoctor
# verify between two running services; its verify.json and ratios go into
# the scenario's folder (record_verify) and its text report to stderr.
pd_verify() {
	local before=$1 after=$2 dir=$3 tmp
	shift 3
	tmp=$(mktemp -d)
	"$PD" verify --before "$before" --after "$after" --out "$tmp" "$@" >&2 || [ $? -eq 4 ]
	record_verify "$tmp" "$dir"
	rm -rf "$tmp"
}

# warm URL SECONDS [LOAD-FLAGS...]: a short load so the JIT has compiled
# the hot paths before anything is measured.
warm() {
	local url=$1 secs=$2
	shift 2
	"$PD" load "$url" -c 16 -d "${secs}s" "$@" >/dev/null
}

# set_measured SCENARIO_DIR BY: names which ratio is the scenario's gain in
# scenario.json's "measured" (throughput or cpu_per_unit); the ratios
# themselves come from verify.json through record_verify.
set_measured() {
	python3 - "$1/scenario.json" "$2" <<'PY'
import json, sys
path, by = sys.argv[1], sys.argv[2]
s = json.load(open(path))
m = s.setdefault("measured", {})
if by not in m:
    sys.exit(f"{path}: measured has no {by} ratio")
s["measured"] = {"by": by, **{k: v for k, v in m.items() if k != "by"}}
with open(path, "w") as f:
    json.dump(s, f, indent=2, ensure_ascii=False)
    f.write("\n")
PY
}

# jvm_record_cmd PID PORT DEST SECONDS UNITS UNIT CMD: like jvm_record for a
# load that is not HTTP (pd_record_cmd with --jvm, or $JVM_COLLECT).
jvm_record_cmd() {
	pd_record_cmd "${JVM_COLLECT:---jvm}" "$@"
}

# pd_record_cmd MODE PID PORT DEST SECONDS UNITS UNIT CMD [RUN-FLAGS...]: like
# pd_record for a load that is not HTTP: CMD (a client doing UNITS units of
# work named UNIT, {host} and {port} standing for 127.0.0.1:PORT) runs again
# and again over the window, and the bundle counts the units served.
pd_record_cmd() {
	local mode=$1 pid=$2 port=$3 dest=$4 secs=$5 units=$6 unit=$7 cmd=$8
	shift 8
	# run takes --load or --load-cmd, not both: the placeholders are ours
	cmd=${cmd//\{host\}/127.0.0.1}
	cmd=${cmd//\{port\}/$port}
	pd_record "$mode" "$pid" "$dest" "$secs" --load-cmd "$cmd" --units "$units" --unit "$unit" "$@"
}

# pd_verify_cmd BEFORE_PORT AFTER_PORT SCENARIO_DIR UNITS UNIT CMD
# [VERIFY-FLAGS...]: perfdoctor verify with a load that is not HTTP, CMD
# run against each side ({host} {port}), into the scenario's verify.json.
pd_verify_cmd() {
	local before=$1 after=$2 dir=$3 units=$4 unit=$5 cmd=$6
	shift 6
	pd_verify "tcp://127.0.0.1:$before" "tcp://127.0.0.1:$after" "$dir" \
		--load-cmd "$cmd" --units "$units" --unit "$unit" "$@"
}

# stop_bg PID: stops one process group started with bg, now.
stop_bg() {
	local pid=$1
	kill -TERM -- "-$pid" 2>/dev/null || true
	for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
	kill -KILL -- "-$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
}

# scenario_init: first thing in a record.sh after sourcing this file: sets
# HERE (the scenario's folder) and W (its scratch directory), takes the CPU
# lock (downloads, builds and server start-ups are CPU work too) and builds
# perfdoctor.
scenario_init() {
	HERE=$(cd "$(dirname "$0")" && pwd)
	W=$(work_dir "$(basename "$HERE")")
	cpu_lock
	pd_build
}

# measure_http BAD_PID FIX_PID BAD_URL FIX_URL WARM_SECONDS [LOAD-FLAGS...]:
# an HTTP scenario's measurement: both sides warmed, bad/ recorded with
# perfdoctor run --jvm (and fixed/ when FIX_PID is not empty), the fix
# measured by verify (6 rounds of 10 s) into verify.json and scenario.json's
# "measured" (throughput). LOAD-FLAGS (-c, -H...) go to every load.
measure_http() {
	local bad_pid=$1 fix_pid=$2 bad=$3 fix=$4 warm_s=$5
	shift 5
	warm "$bad" "$warm_s" "$@"
	warm "$fix" "$warm_s" "$@"
	jvm_record "$bad_pid" "$bad" "$HERE/bad" 20 "$@"
	pd_verify "$bad" "$fix" "$HERE" -d 10s --rounds 6 --warmup 2s "$@"
	if [ -n "$fix_pid" ]; then
		jvm_record "$fix_pid" "$fix" "$HERE/fixed" 20 "$@"
	fi
	set_measured "$HERE" throughput
}

# pd_record MODE PID DEST SECONDS RUN-FLAGS...: perfdoctor run observing
# the local process PID with MODE (--perf for any native process through
# Linux perf, --jvm, --jfr) for SECONDS under the load RUN-FLAGS give
# (--load URL [-c N ...], or --load tcp://127.0.0.1:PORT --load-cmd CMD
# --units N --unit NAME); the bundle, with load.json, is kept in DEST and
# the report's load line and findings go to stderr.
pd_record() {
	local mode=$1 pid=$2 dest=$3 secs=$4 tmp
	shift 4
	skip_record "$dest" && return 0
	tmp=$(mktemp -d)
	"$PD" run "$mode" "$pid" -d "${secs}s" -o "$tmp" "$@" >"$tmp/report.out"
	grep -E '^ *load:|^ *[0-9]+\. \[' "$tmp/report.out" >&2 || true
	keep_bundle "$tmp" "$dest"
}

# drop_measured SCENARIO_DIR FIELD: removes one ratio (cpu_per_unit) from
# scenario.json's "measured", for a server whose work is done by processes
# other than the one listening (verify's CPU per unit reads the listener
# alone: a PostgreSQL postmaster, an nginx or Apache master), so no figure
# stands there that measured the wrong process.
drop_measured() {
	python3 - "$1/scenario.json" "$2" <<'PY'
import json, sys
path, field = sys.argv[1], sys.argv[2]
s = json.load(open(path))
s.get("measured", {}).pop(field, None)
with open(path, "w") as f:
    json.dump(s, f, indent=2, ensure_ascii=False)
    f.write("\n")
PY
}

# nginx_start CONF: an nginx in the foreground (its master process is
# BG_PID) with the configuration file CONF, its error log on CONF.stderr
# until the configuration's own error_log takes over.
nginx_start() {
	bg nginx -e "$1.stderr" -c "$1" -g "daemon off; pid $1.pid;"
}

# nginx_site DIR PORT [OPTION...]: the static-file scenarios' nginx
# (worker_processes auto, mime types, sendfile, no access log) serving the
# folder DIR/www on 127.0.0.1:PORT, its configuration DIR/site-PORT.conf and
# its error log DIR/site-PORT-error.log; BG_PID is its master. OPTIONs, in
# the order they are given within each block:
#   level=LEVEL       the error log's level (nginx's default, error, without it)
#   http=DIRECTIVE    a directive for the http block, after sendfile
#   keepalive         keepalive_requests 100000 (a client's connection lasts
#                     the whole load, not nginx's default 1,000 requests)
#   server=DIRECTIVE  a directive for the server block, after root
nginx_site() {
	local dir=$1 port=$2 level='' keepalive='' http=() server=() o d
	shift 2
	for o in "$@"; do
		case $o in
		level=*) level=" ${o#level=}" ;;
		http=*) http+=("${o#http=}") ;;
		keepalive) keepalive=1 ;;
		server=*) server+=("${o#server=}") ;;
		*) echo "nginx_site: unknown option $o" >&2; return 1 ;;
		esac
	done
	{
		echo "worker_processes auto;"
		echo "error_log $dir/site-$port-error.log$level;"
		echo "events { worker_connections 4096; }"
		echo "http {"
		echo "  include /etc/nginx/mime.types;"
		echo "  access_log off;"
		echo "  sendfile on;"
		for d in "${http[@]}"; do echo "  $d"; done
		echo "  server {"
		echo "    listen 127.0.0.1:$port backlog=4096;"
		if [ -n "$keepalive" ]; then echo "    keepalive_requests 100000;"; fi
		echo "    root $dir/www;"
		for d in "${server[@]}"; do echo "    $d"; done
		echo "  }"
		echo "}"
	} >"$dir/site-$port.conf"
	nginx_start "$dir/site-$port.conf"
	wait_port "$port"
}

# memcached_start PORT THREADS: a memcached on 127.0.0.1:PORT (as the
# package's memcache user) with THREADS worker threads, 1 GiB for items (no
# eviction in a recording) and UDP off; BG_PID is its PID.
memcached_start() {
	bg memcached -u memcache -l "127.0.0.1" -p "$1" -U 0 -m 1024 -t "$2"
	wait_port "$1"
}

# redis_start PORT DIR [DIRECTIVE...]: a redis-server on 127.0.0.1:PORT with
# its files and log in DIR (emptied first), no RDB snapshots, and the redis.conf
# directives given (one per argument, e.g. 'appendfsync always'); BG_PID is
# its PID.
redis_start() {
	local port=$1 dir=$2 d
	shift 2
	rm -rf "$dir"
	mkdir -p "$dir"
	{
		printf 'bind 127.0.0.1\nport %s\ndir %s\nsave ""\nlogfile %s/redis.log\n' "$port" "$dir" "$dir"
		for d in "$@"; do printf '%s\n' "$d"; done
	} >"$dir/redis.conf"
	bg redis-server "$dir/redis.conf"
	wait_port "$port"
}

# mariadb_start PORT DIR [OPTION...]: a private MariaDB server (the
# distribution's mariadbd, its data in DIR, created afresh) on
# 127.0.0.1:PORT, root without a password, with the [mariadbd] options
# given (one per argument, e.g. 'sync_binlog=1'); BG_PID is its PID.
mariadb_start() {
	local port=$1 dir=$2 o
	shift 2
	rm -rf "$dir"
	mkdir -p "$dir"
	{
		printf '[mariadbd]\ndatadir=%s/data\nsocket=%s/sock\nport=%s\nbind-address=127.0.0.1\nuser=root\n' "$dir" "$dir" "$port"
		printf 'pid-file=%s/pid\nlog-error=%s/error.log\n' "$dir" "$dir"
		for o in "$@"; do printf '%s\n' "$o"; done
	} >"$dir/my.cnf"
	mariadb-install-db --defaults-file="$dir/my.cnf" --auth-root-authentication-method=normal \
		--skip-test-db >"$dir/install.log" 2>&1
	bg mariadbd --defaults-file="$dir/my.cnf"
	wait_port "$port" 120
}

# pg_postmaster DATADIR: the PID of the postmaster pg_start started there
# (BG_PID is runuser's), printed.
pg_postmaster() {
	head -n1 "$1/postmaster.pid"
}

# measure_cmd BAD_PID BAD_PORT FIX_PORT SCENARIO_DIR UNITS UNIT CMD
# [RECORD_SECONDS [ROUND_SECONDS]]: a native scenario's measurement with a
# load that is not HTTP (CMD, UNITS and UNIT as pd_record_cmd takes them):
# once the machine is idle, the bad side's process BAD_PID is recorded with
# perf for RECORD_SECONDS (default 20) into SCENARIO_DIR/bad, after_record
# runs when the script defines it, and the fix is measured by verify (6
# rounds of ROUND_SECONDS, default 10) as the scenario's throughput gain.
measure_cmd() {
	local bad_pid=$1 bad=$2 fix=$3 dir=$4 units=$5 unit=$6 cmd=$7 secs=${8:-20} round=${9:-10}
	wait_idle
	pd_record_cmd --perf "$bad_pid" "$bad" "$dir/bad" "$secs" "$units" "$unit" "$cmd" --warmup 5s
	if declare -F after_record >/dev/null; then
		after_record
	fi
	pd_verify_cmd "$bad" "$fix" "$dir" "$units" "$unit" "$cmd" -d "${round}s" --rounds 6 --warmup 2s
	set_measured "$dir" throughput
}

# pgbench_lookups BAD_PORT BAD_PID FIX_PORT SCENARIO_DIR: the PostgreSQL
# scenarios' workload and measurement. pgbench's tables go into both
# clusters (scale 10: 1,000,000 accounts, 160 MB); the load is pgbench's
# prepared select-only lookups from 8 connections, 5,000 each a run,
# measured by measure_cmd (the bad cluster's postmaster, BAD_PID, recorded):
# verify reads the listening postmaster, not its backends, so its CPU per
# unit is dropped.
pgbench_lookups() {
	local bad=$1 bad_pid=$2 fix=$3 dir=$4 p
	local units=40000 load='pgbench -h {host} -p {port} -U postgres -n -S -M prepared -c 8 -j 2 -t 5000 postgres'
	for p in "$bad" "$fix"; do
		pgbench -h 127.0.0.1 -p "$p" -U postgres -i -s 10 -q postgres >/dev/null 2>&1
	done
	measure_cmd "$bad_pid" "$bad" "$fix" "$dir" "$units" lookup "$load"
	drop_measured "$dir" cpu_per_unit
}

# json_upstream PORT DIR: the backend of the proxy scenarios: an nginx (one
# worker, keep-alive kept) on 127.0.0.1:PORT answering every request with the
# same 70-byte JSON document, its configuration and log in DIR.
json_upstream() {
	local port=$1 dir=$2
	cat >"$dir/upstream.conf" <<CONF
worker_processes 1;
error_log $dir/upstream-error.log;
events { worker_connections 4096; }
http {
  access_log off;
  server {
    listen 127.0.0.1:$port backlog=4096;
    keepalive_requests 100000;
    location / {
      default_type application/json;
      return 200 '{"id":42,"name":"widget","price":9.5,"stock":17,"tags":["blue","small"]}';
    }
  }
}
CONF
	nginx_start "$dir/upstream.conf"
	wait_port "$port"
}
