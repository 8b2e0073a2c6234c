#!/bin/sh
# Writes threadcreate.pb.gz and threadcreate.txt: Go's threadcreate profile
# as profile.proto and as debug=1 text, from main.go.
set -eu
cd "$(dirname "$0")"
go run ./main.go
