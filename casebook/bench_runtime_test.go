package casebook

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"
)

// Benchmarks of the runtime-class cases, in the style of bench_test.go:
// each variant in a fresh process, warmed up, then b.N requests closed loop.
// Besides req/s and p99 they report the service's CPU per request (user +
// system time of the child process over the timed requests, from
// /proc/PID/stat): on a small machine shared with the load generator,
// throughput follows the CPU share the service wins, while CPU per request
// is what the fix saves.
//
//	go test -run '^$' -bench 'A3|A4|B1|B4|B5|Control' -benchtime=20000x -count=5 ./casebook/
//	go test -run '^$' -bench 'B2' -benchtime=2000x -count=5 ./casebook/   # B2 bad: ~4 ms a request
func BenchmarkA3(b *testing.B)      { benchRuntimeCase(b, "a3") }
func BenchmarkA4(b *testing.B)      { benchRuntimeCase(b, "a4") }
func BenchmarkB1(b *testing.B)      { benchRuntimeCase(b, "b1") }
func BenchmarkB2(b *testing.B)      { benchRuntimeCase(b, "b2") }
func BenchmarkB4(b *testing.B)      { benchRuntimeCase(b, "b4") }
func BenchmarkB5(b *testing.B)      { benchRuntimeCase(b, "b5") }
func BenchmarkControl(b *testing.B) { benchRuntimeCase(b, "control") }

func benchRuntimeCase(b *testing.B, caseName string) {
	for _, variant := range []string{"bad", "fixed"} {
		b.Run(variant, func(b *testing.B) {
			p := startVariant(b, caseName, variant)
			if b.N > 1 { // the testing package's probing run has b.N == 1
				drive(b, context.Background(), p.appURL, benchConcurrency, 0, warmUp)
			}
			cpu0, err := processCPU(p.cmd.Process.Pid)
			if err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			res := drive(b, context.Background(), p.appURL, benchConcurrency, int64(b.N), 0)
			b.StopTimer()
			cpu1, err := processCPU(p.cmd.Process.Pid)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(res.Throughput, "req/s")
			b.ReportMetric(float64(res.Latency.P99)/float64(time.Millisecond), "p99-ms")
			if res.Requests > 0 {
				b.ReportMetric(float64(cpu1-cpu0)/float64(time.Microsecond)/float64(res.Requests), "cpu-us/req")
			}
		})
	}
}

// processCPU is the user + system CPU time process pid has used, from
// /proc/PID/stat (clock ticks of 1/100 s on Linux).
func processCPU(pid int) (time.Duration, error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// Fields after the command name, which is in parentheses and may hold
	// spaces: state is field 3, utime 14, stime 15.
	i := bytes.LastIndexByte(raw, ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: no command name", pid)
	}
	f := bytes.Fields(raw[i+1:])
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f))
	}
	utime, err1 := strconv.ParseInt(string(f[11]), 10, 64)
	stime, err2 := strconv.ParseInt(string(f[12]), 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("/proc/%d/stat: utime %q stime %q", pid, f[11], f[12])
	}
	const tick = 10 * time.Millisecond // USER_HZ = 100
	return time.Duration(utime+stime) * tick, nil
}
