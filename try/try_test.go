package try

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/perfdoctor/perfdoctor/internal/supervise"
	"github.com/perfdoctor/perfdoctor/load"
	"github.com/perfdoctor/perfdoctor/report"
	"github.com/perfdoctor/perfdoctor/rules"
	"github.com/perfdoctor/perfdoctor/verify"
)

// serveEnv makes the test binary a service (see TestMain): it listens on
// the address in this variable and answers slowly unless GOGC=400.
const serveEnv = "PERFDOCTOR_TRY_TEST_SERVE"

func TestMain(m *testing.M) {
	if addr := os.Getenv(serveEnv); addr != "" {
		slow := os.Getenv("GOGC") != "400"
		http.ListenAndServe(addr, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			if slow {
				time.Sleep(2 * time.Millisecond)
			}
		}))
		os.Exit(1)
	}
	os.Exit(m.Run())
}

func gogc400(id string) rules.Finding {
	return rules.Finding{ID: id, Rule: strings.Split(id, "#")[0], Config: &rules.ConfigFix{Gain: 0.3,
		Changes: []rules.ConfigChange{{Kind: rules.ConfigEnv, Name: "GOGC", Value: "400", Now: "100"}}}}
}

// TestRunTriesTheConfigurationOnAFreshProcessEachTime: the service is
// this test binary, faster under the prescribed GOGC=400; the finding gets
// the trial.
func TestRunTriesTheConfigurationOnAFreshProcessEachTime(t *testing.T) {
	addr := freeAddr(t)
	rep := &report.Report{Findings: []rules.Finding{gogc400("GC001"), {ID: "CPU001", Rule: "CPU001"}, gogc400("GC002")}}
	var rounds []string
	res, err := Run(context.Background(), Options{
		Command: os.Args[0], Environ: append(os.Environ(), serveEnv+"="+addr, "GOGC=100"),
		Load:   load.Config{URL: "http://" + addr + "/", Concurrency: 2, Duration: 400 * time.Millisecond},
		Rounds: 3, ReadyTimeout: 10 * time.Second, Report: rep,
		OnRound: func(id string, done, of int, r verify.Round) { rounds = append(rounds, id) },
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Outcomes) != 1 || len(res.Outcomes[0].Findings) != 2 || len(rounds) != 3 {
		t.Fatalf("GC001 and GC002 prescribe the same GOGC: want one trial for both, got %+v (rounds %v)", res.Outcomes, rounds)
	}
	tr := rep.Findings[0].Tried
	if tr == nil || rep.Findings[2].Tried != tr || rep.Findings[1].Tried != nil {
		t.Fatalf("trials attached: %+v", rep.Findings)
	}
	if tr.Config != "GOGC=400" || tr.Rounds != 3 || tr.PredictedGain != 0.3 || tr.PeakRSSCurrent == 0 || tr.PeakRSSPrescribed == 0 {
		t.Errorf("trial %+v", tr)
	}
	// 2 ms less a request over 2 connections: throughput several times higher.
	if tr.ThroughputGain.Estimate <= 0 || tr.Verdict != verify.Faster {
		t.Errorf("the prescribed configuration is faster by construction; trial says %+v", tr)
	}
	var text strings.Builder
	res.WriteText(&text)
	for _, want := range []string{"GC001, GC002: GOGC=400 (now GOGC=100), 3 rounds", "throughput", "peak RSS", "verdict: faster"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, text.String())
		}
	}
}

func TestRunRefusesAConfigurationTheCommandDrops(t *testing.T) {
	addr := freeAddr(t)
	rep := &report.Report{Findings: []rules.Finding{gogc400("GC001")}}
	_, err := Run(context.Background(), Options{
		Command: "exec env -u GOGC " + os.Args[0], Environ: append(os.Environ(), serveEnv+"="+addr),
		Load:   load.Config{URL: "http://" + addr + "/", Concurrency: 1, Duration: 200 * time.Millisecond},
		Rounds: 2, ReadyTimeout: 10 * time.Second, Report: rep,
	})
	if err == nil || !strings.Contains(err.Error(), "did not reach the service") {
		t.Fatalf("err = %v, want the dropped GOGC named", err)
	}
}

func TestNothingToTry(t *testing.T) {
	rep := &report.Report{Findings: []rules.Finding{{ID: "CPU001"}, {ID: "BAD", Config: &rules.ConfigFix{Changes: []rules.ConfigChange{{Kind: "sysctl", Name: "x"}}}}}}
	res, err := Run(context.Background(), Options{Command: "false", Report: rep, Rounds: 2})
	if err != nil || len(res.Outcomes) != 0 {
		t.Fatalf("outcomes %+v, err %v", res, err)
	}
	var text strings.Builder
	res.WriteText(&text)
	if !strings.Contains(text.String(), "nothing to try") {
		t.Errorf("text %q", text.String())
	}
}

func TestCandidatesOnly(t *testing.T) {
	rep := &report.Report{Findings: []rules.Finding{gogc400("GC001"), gogc400("GC002")}}
	if c := candidates(rep, []string{"GC002"}); len(c) != 1 || len(c[0].Findings) != 1 || c[0].Findings[0] != "GC002" {
		t.Errorf("--only GC002: %+v", c)
	}
}

func TestJudge(t *testing.T) {
	c := &rules.ConfigFix{Gain: 0.30, Changes: []rules.ConfigChange{{Kind: rules.ConfigEnv, Name: "GOGC", Value: "400"}}}
	for _, tc := range []struct {
		cpu  load.Ratio
		want string
	}{
		{load.Ratio{Estimate: 0.72, Low: 0.65, High: 0.80, N: 4}, "within"}, // gain 28% [20%, 35%]
		{load.Ratio{Estimate: 0.90, Low: 0.85, High: 0.95, N: 4}, "over"},   // gain 10% [5%, 15%]
		{load.Ratio{Estimate: 0.50, Low: 0.45, High: 0.55, N: 4}, "under"},  // gain 50% [45%, 55%]
	} {
		v := &verify.Result{Verdict: verify.Faster, CPU: tc.cpu, Throughput: load.Ratio{Estimate: 1.2, Low: 1.1, High: 1.3, N: 4},
			Rounds: []verify.Round{{BeforePeakRSS: 60 << 20, AfterPeakRSS: 500 << 20}, {BeforePeakRSS: 70 << 20, AfterPeakRSS: 400 << 20}}}
		tr := Judge(c, v)
		if tr.Prediction != tc.want || tr.CPUGain.Low != 1-tc.cpu.High || tr.CPUGain.High != 1-tc.cpu.Low {
			t.Errorf("cpu ratio %+v: prediction %q, gain %+v; want %q", tc.cpu, tr.Prediction, tr.CPUGain, tc.want)
		}
		if tr.PeakRSSCurrent != 70<<20 || tr.PeakRSSPrescribed != 500<<20 || tr.ThroughputGain.Low < 0.0999 {
			t.Errorf("trial %+v", tr)
		}
	}
	if tr := Judge(c, &verify.Result{}); tr.CPUGain != nil || tr.Prediction != "" {
		t.Errorf("CPU unknown: %+v", tr)
	}
}

func TestApplied(t *testing.T) {
	c := &rules.ConfigFix{Changes: []rules.ConfigChange{{Kind: rules.ConfigEnv, Name: "GOGC", Value: "400"}, {Kind: rules.ConfigJVMFlag, Name: "-Xmx", Value: "1g"}}}
	for cmd, ok := range map[string]bool{"exec sleep 30": true, "exec env -u GOGC sleep 30": false, "JAVA_TOOL_OPTIONS= exec sleep 30": false} {
		sh := exec.Command("sh", "-c", cmd)
		sh.Env = c.Environ(os.Environ())
		p, err := supervise.Start(sh, true)
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(100 * time.Millisecond) // let exec happen
		if err := applied(p.PID(), c); (err == nil) != ok {
			t.Errorf("%s: %v", cmd, err)
		}
		p.Stop()
	}
}

func freeAddr(t *testing.T) string {
	srv := httptest.NewServer(nil)
	addr := srv.Listener.Addr().String()
	srv.Close()
	return addr
}
