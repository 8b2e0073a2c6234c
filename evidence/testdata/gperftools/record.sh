#!/bin/sh
# Records heap-sample.prof and growth.prof with tcmalloc (gperftools 2.10,
# Debian's libgoogle-perftools-dev): sample.cc asks the allocator for its
# heap sample (what /pprof/heap serves: objects and space in use, sampled
# every 64 KiB here) and for the stacks that grew the heap (/pprof/growth).
# Both are google/pprof legacy text profiles of sample types objects/space.
set -eu
cd "$(dirname "$0")"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
c++ -O1 -g -fno-omit-frame-pointer -o "$tmp/sample" sample.cc -ltcmalloc
TCMALLOC_SAMPLE_PARAMETER=65536 "$tmp/sample" heap-sample.prof growth.prof
