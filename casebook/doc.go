// Package casebook holds runnable reproductions of cases from
// design/casebook.md, each with a bad and a fixed variant, as plain Go
// services that perfdoctor is tested against:
//
//   - d1gc: case D1, gc-pressure.
//   - d2udp: case D2, connection-churn.
//   - serve: runs a variant with net/http/pprof on a separate listener.
//   - cmd/casebook: the same as a standalone binary.
//
// This package has only the benchmarks (bench_test.go) that measure the bad
// to fixed throughput ratio of each case; see README.md.
package casebook
