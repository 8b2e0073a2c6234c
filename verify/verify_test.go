package verify

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/perfdoctor/perfdoctor/load"
)

// rounds builds complete rounds from per-round throughput and p99 pairs.
func rounds(pairs ...[4]float64) []Round {
	var out []Round
	for i, p := range pairs {
		res := func(tput, p99ms float64) *load.Result {
			d := time.Duration(p99ms * float64(time.Millisecond))
			return &load.Result{Throughput: tput, Latency: load.Percentiles{P50: d / 2, P99: d}}
		}
		out = append(out, Round{Round: i + 1, Before: res(p[0], p[1]), After: res(p[2], p[3])})
	}
	return out
}

func TestJudge(t *testing.T) {
	for name, c := range map[string]struct {
		rounds    []Round
		minChange float64
		want      string
		why       string
	}{
		"after is slower": {rounds([4]float64{1000, 5, 700, 9}, [4]float64{1010, 5.1, 690, 9.2}, [4]float64{990, 4.9, 710, 8.8}), 0, Slower, "throughput"},
		"after is faster": {rounds([4]float64{700, 9, 1000, 5}, [4]float64{690, 9.2, 1010, 5.1}, [4]float64{710, 8.8, 990, 4.9}), 0, Faster, ""},
		"noise only":      {rounds([4]float64{1000, 5, 1010, 5}, [4]float64{1000, 5, 990, 5}, [4]float64{1000, 5, 1000, 5}), 0, Same, ""},
		"one round":       {rounds([4]float64{1000, 5, 500, 10}), 0, Same, "fewer than two"},
		"below min-change": {rounds([4]float64{1000, 5, 980, 5.1}, [4]float64{1000, 5, 981, 5.1}, [4]float64{1000, 5, 979, 5.1}),
			0.05, Same, ""},
	} {
		v := &Result{Rounds: c.rounds}
		v.judge(c.minChange)
		if v.Verdict != c.want || !strings.Contains(v.Why, c.why) {
			t.Errorf("%s: verdict %q (%s), want %q", name, v.Verdict, v.Why, c.want)
		}
		if len(c.rounds) >= 2 && len(v.Ratios) != 3 {
			t.Errorf("%s: %d ratios, want throughput, p50 and p99 (no CPU figures)", name, len(v.Ratios))
		}
	}
}

func TestLocalPID(t *testing.T) {
	for _, u := range []string{"udp://127.0.0.1:9000", "http://192.0.2.1:80/", "not a url", "http://127.0.0.1:1/"} {
		if pid := LocalPID(u); pid != 0 {
			t.Errorf("LocalPID(%q) = %d, want 0", u, pid)
		}
	}
}

// TestStartPerMeasurement runs both versions on one address, each started
// for its own measurements only, as perfdoctor try does.
func TestStartPerMeasurement(t *testing.T) {
	addr := "127.0.0.1:" + freePort(t)
	var starts, stops [2]int
	running := -1
	start := func(ctx context.Context, i int) (int, func(), error) {
		if running >= 0 {
			t.Errorf("version %d started while %d runs", i, running)
		}
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			return 0, nil, err
		}
		srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			if i == 1 {
				time.Sleep(time.Millisecond) // the after version is slower
			}
		})}
		go srv.Serve(ln)
		starts[i]++
		running = i
		return os.Getpid(), func() { srv.Close(); stops[i]++; running = -1 }, nil
	}
	cfg := load.Config{URL: "http://" + addr + "/", Concurrency: 2, Duration: 300 * time.Millisecond}
	v, err := Run(context.Background(), Options{Before: cfg, After: cfg, Rounds: 3, Warmup: 50 * time.Millisecond, Start: start})
	if err != nil {
		t.Fatal(err)
	}
	if starts != [2]int{3, 3} || stops != starts {
		t.Errorf("starts %v stops %v, want each version started and stopped once a round", starts, stops)
	}
	if len(v.Rounds) != 3 || v.Rounds[0].BeforePeakRSS == 0 || v.Rounds[2].AfterPeakRSS == 0 || v.Rounds[1].BeforeCPU == 0 {
		t.Fatalf("rounds lack the process's CPU and peak RSS: %+v", v.Rounds)
	}
	var figures []string
	for _, r := range v.Ratios {
		figures = append(figures, r.Figure)
	}
	if !slices.Equal(figures, []string{"throughput", "p50 latency", "p99 latency", "CPU/request", "peak RSS"}) {
		t.Errorf("figures %v", figures)
	}
	if v.SchemaVersion != SchemaVersion {
		t.Errorf("schema version %d", v.SchemaVersion)
	}
}

func freePort(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
}

func TestJSONMatchesSchema(t *testing.T) {
	schema, err := jsonschema.NewCompiler().Compile("../docs/verify.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	v := &Result{SchemaVersion: SchemaVersion, Before: "http://127.0.0.1:1/", After: "http://127.0.0.1:2/", Method: "m",
		Rounds: rounds([4]float64{1000, 5, 1200, 4}, [4]float64{1010, 5.1, 1190, 4.2}, [4]float64{990, 4.9, 1210, 3.9})}
	for i := range v.Rounds {
		v.Rounds[i].Before.URL, v.Rounds[i].After.URL = v.Before, v.After
		v.Rounds[i].Before.Mode, v.Rounds[i].After.Mode, v.Rounds[i].First = "closed", "closed", []string{"before", "after"}[i%2]
		v.Rounds[i].BeforeCPU, v.Rounds[i].AfterCPU = 100, 80
		v.Rounds[i].BeforePeakRSS, v.Rounds[i].AfterPeakRSS = 60<<20, 900<<20
	}
	v.JITSettle = []JITSettle{{Side: "before", PID: 4242, Seconds: 31.2, Settled: true, CompilerCores: 0.012},
		{Side: "after", PID: 4243, Seconds: 90, CompilerCores: 0.21}}
	v.judge(0)
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	if err := schema.Validate(doc); err != nil {
		t.Errorf("verify JSON does not match docs/verify.schema.json: %v\n%s", err, b)
	}
	if len(v.Ratios) != 5 || v.Verdict != Faster {
		t.Errorf("ratios %+v verdict %s", v.Ratios, v.Verdict)
	}
}

// commandPair listens on two ports (this process) and loads each with a
// command doing the same units, ten times faster on the second port.
func commandPair(t *testing.T) (ports [2]string, cfg func(port string) load.Config) {
	t.Helper()
	for i := range ports {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		_, ports[i], _ = net.SplitHostPort(l.Addr().String())
	}
	slow := "if [ {port} = " + ports[0] + " ]; then sleep 0.2; else sleep 0.02; fi"
	return ports, func(port string) load.Config {
		return load.Config{URL: "tcp://127.0.0.1:" + port, Command: slow, UnitsPerRun: 100, Unit: "op", Duration: 800 * time.Millisecond}
	}
}

// TestCommandLoads compares two versions loaded by a benchmark command, as
// for a server that speaks neither HTTP nor UDP: the after side's command
// does the same units in a tenth of the time. The verdict follows
// throughput alone, and no latency figure is made up.
func TestCommandLoads(t *testing.T) {
	ports, cfg := commandPair(t)
	v, err := Run(context.Background(), Options{Before: cfg(ports[0]), After: cfg(ports[1]), Rounds: 3,
		PIDs: [2]int{LocalPID("tcp://127.0.0.1:" + ports[0]), LocalPID("tcp://127.0.0.1:" + ports[1])}})
	if err != nil {
		t.Fatal(err)
	}
	if v.Verdict != Faster {
		t.Fatalf("verdict %s (%s), throughput %s", v.Verdict, v.Why, v.Throughput)
	}
	for _, r := range v.Ratios {
		if strings.Contains(r.Figure, "latency") {
			t.Errorf("a command load measures no latency, yet verify judged %s", r.Figure)
		}
	}
	if v.Rounds[0].Before.Mode != load.ModeCommand || v.Rounds[0].After.Unit != "op" {
		t.Fatalf("rounds are not command loads: %+v", v.Rounds[0].Before)
	}
	if LocalPID("tcp://127.0.0.1:"+ports[0]) != os.Getpid() {
		t.Errorf("LocalPID of a tcp:// address is not the process listening there")
	}
}

// TestTogether measures both versions at once: the after side's command
// does the same units in a tenth of the time, and every round says both.
// This test process listens on both ports, so its own CPU time is read
// through the threads' schedstat.
func TestTogether(t *testing.T) {
	ports, cfg := commandPair(t)
	pid := os.Getpid()
	// Three rounds, as TestCommandLoads: with two, the paired t-test's one
	// degree of freedom asks a t of 12.7, and a loaded machine's spread
	// between the rounds hid even this tenfold change (CI saw it once).
	v, err := Run(context.Background(), Options{Before: cfg(ports[0]), After: cfg(ports[1]), Rounds: 3, Together: true, PIDs: [2]int{pid, pid}})
	if err != nil {
		t.Fatal(err)
	}
	if v.Verdict != Faster || len(v.Rounds) != 3 {
		t.Fatalf("verdict %s (%s), %d rounds", v.Verdict, v.Why, len(v.Rounds))
	}
	for _, r := range v.Rounds {
		if r.First != "both" {
			t.Errorf("round %d measured %q first, want both at once", r.Round, r.First)
		}
	}
}

// TestCPUSince: the threads' nanosecond run times decide while every
// thread of the start is still there; a thread that exited hands over to
// the tick count.
func TestCPUSince(t *testing.T) {
	a := cpuReading{stat: 1.00, statOK: true, threads: map[int]uint64{10: 5e8, 11: 2e8}}
	b := cpuReading{stat: 1.30, statOK: true, threads: map[int]uint64{10: 6.5e8, 11: 3e8, 12: 0.4e8}}
	if got, ok := cpuSince(a, b); !ok || got < 0.2899 || got > 0.2901 {
		t.Errorf("threads: %v %v, want 0.29 s (0.15 + 0.10 + a new thread's 0.04)", got, ok)
	}
	b.threads = map[int]uint64{10: 6.5e8}
	if got, ok := cpuSince(a, b); !ok || got < 0.2999 || got > 0.3001 {
		t.Errorf("a thread exited: %v %v, want the ticks' 0.30 s", got, ok)
	}
	if _, ok := cpuSince(cpuReading{}, b); ok {
		t.Error("an unreadable start gave a figure")
	}
	if r := readCPU(os.Getpid()); !r.statOK || len(r.threads) == 0 {
		t.Errorf("this process: %+v", r)
	}
}
