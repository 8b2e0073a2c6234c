package loadtext

import (
	"strings"
	"testing"
	"time"

	"github.com/perfdoctor/perfdoctor/load"
	"github.com/perfdoctor/perfdoctor/verify"
)

func TestTables(t *testing.T) {
	res := &load.Result{URL: "http://127.0.0.1:8080/", Mode: "open", Rate: 200, Concurrency: 4, Duration: 2 * time.Second,
		Requests: 400, Errors: 1, ErrorsByKind: map[string]int64{"timeout": 1}, Throughput: 199.5,
		Latency:  load.Percentiles{P50: 1234 * time.Microsecond, P99: 9 * time.Millisecond, Max: 1500 * time.Millisecond},
		Timeline: []load.Second{{T: 0, OK: 199, P99: 9 * time.Millisecond}, {T: 1, OK: 200, Errors: 1}}}
	var b strings.Builder
	WriteResult(&b, res)
	for _, want := range []string{"open loop at 200 req/s over 4 connections for 2s", "400 (1 errors), 199.5 successful req/s",
		"errors     timeout=1", "p50 1.23ms", "max 1.5s", "service ", "      1       200       1         -"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("load table lacks %q:\n%s", want, b.String())
		}
	}

	obj, err := load.ParseObjective("p99<10ms")
	if err != nil {
		t.Fatal(err)
	}
	b.Reset()
	WriteCapacity(&b, &load.Capacity{Objective: obj, Best: 200, Steps: []load.Step{
		{Rate: 200, Result: res, Value: 9 * time.Millisecond, Pass: true},
		{Rate: 400, Result: res, Value: 30 * time.Millisecond, Why: "p99 30ms > 10ms"}}})
	for _, want := range []string{"p99", "meets p99<10ms", "fails: p99 30ms > 10ms", "highest rate meeting p99<10ms: 200 req/s"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("capacity table lacks %q:\n%s", want, b.String())
		}
	}

	b.Reset()
	v := &verify.Result{Before: "http://a/", After: "http://b/", Verdict: verify.Slower, Why: "throughput 0.70x",
		Rounds: []verify.Round{{Round: 1, First: "before", Before: res, After: res}},
		Ratios: []verify.Ratio{{Figure: "throughput", Estimate: 0.7, Low: 0.6, High: 0.8, Change: "worse"}}, Method: "paired",
		JITSettle: []verify.JITSettle{{Side: "before", PID: 42, Seconds: 31.4, Settled: true}, {Side: "after", PID: 43, Seconds: 90, CompilerCores: 0.2}}}
	WriteVerify(&b, v)
	for _, want := range []string{"before http://a/", "before: JVM pid 42, its JIT settled after 31s under load",
		"after: JVM pid 43, its JIT was still compiling (0.20 of a core) after 90s", "throughput   0.700x [0.600, 0.800]  worse", "verdict: slower\n"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("verify table lacks %q:\n%s", want, b.String())
		}
	}
	if line := RoundLine(1, 3, v.Rounds[0]); !strings.HasPrefix(line, "verify: round 1/3: before 200 req/s p99 9ms") {
		t.Errorf("round line %q", line)
	}
}
