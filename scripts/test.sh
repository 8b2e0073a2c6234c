#!/usr/bin/env bash
# The full test suite, as CI runs it. Works on a fresh machine: it installs
# what the tests need, checks formatting and vet, then runs every test.
set -euo pipefail
cd "$(dirname "$0")/.."

# Go modules (the only thing the tests need beyond Go itself today).
go mod download

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
