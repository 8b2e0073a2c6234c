package pool001_test

import (
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/pprof/profile"

	"github.com/perfdoctor/perfdoctor/bundle"
	"github.com/perfdoctor/perfdoctor/corpus"
	"github.com/perfdoctor/perfdoctor/evidence"
	"github.com/perfdoctor/perfdoctor/facts"
	"github.com/perfdoctor/perfdoctor/internal/testprof"
	"github.com/perfdoctor/perfdoctor/rules"
	"github.com/perfdoctor/perfdoctor/rules/catalog"
	"github.com/perfdoctor/perfdoctor/rules/pool001"
	"github.com/perfdoctor/perfdoctor/rules/ruletest"
)

// The recorded cases: services written for the rule, each bounded too
// small (it fires, first) and sized right (silent), diagnosed with the
// whole catalog.
func TestRecorded(t *testing.T) {
	ruletest.Run(t, "testdata", catalog.All())
}

// The real-server corpus: the scenarios whose truth is pool-queueing put
// it first, naming the pool's setting; the healthy servers and the other
// problems never show it above low. The Tomcat scenario's fixed side
// queues next on HikariCP's 10 connections (its notes say so): that is
// found, at medium.
func TestCorpus(t *testing.T) {
	scenarios, err := corpus.LoadAll("../../corpus")
	if err != nil {
		t.Fatal(err)
	}
	if len(scenarios) == 0 {
		t.Fatal("no corpus scenarios")
	}
	special := map[string]string{
		"jvm-springboot-tomcat-threads-2/fixed": `top POOL001 medium "HikariCP" "10 connections"`,
		// Jetty's 8 threads (6 running requests) queue next on Hikari's
		// 10 connections: 1.74x measured, a medium gain.
		"jvm-springboot-jetty-threads-8/bad":   `top POOL001 medium "qtp"`,
		"jvm-springboot-jetty-threads-8/fixed": `top POOL001 "HikariCP" "10 connections"`,
	}
	// Known misses of the stated range, each with why: the range is the
	// rule's honest reading of its bundle, and the scorecard
	// (docs/accuracy.md) counts these out of range.
	outsideRange := map[string]string{
		// The floor, 31.7 in flight over 2 children, assumes today's
		// holds (21.6 ms); with 32 children sharing the 2 cores with
		// nginx and the load generator each held 22.2 ms.
		"native-php-fpm-max-children": "15.7x measured, 1% under the 15.9x floor",
		// 16 clients over 1 connection: 16x, as pgbench's own report of
		// the fixed side reads (2,800 lookups/s against 176, 15.9x); the
		// measurement's command load starts pgbench anew each run of 640
		// lookups (16 logins, a tail as its clients finish), 0.29 s a run
		// fixed against 0.23 s of lookups at 2,800/s.
		"native-pgbouncer-pool-size-1": "12.7x measured, under the 16x floor",
	}
	for _, s := range scenarios {
		for _, side := range []string{"bad", "fixed"} {
			dir := filepath.Join(s.Dir, side)
			if _, err := os.Stat(dir); err != nil {
				continue
			}
			name := s.ID + "/" + side
			want := "never POOL001 medium"
			switch {
			case special[name] != "":
				want = special[name]
			case s.Healthy:
				want = "never POOL001"
			case side == "bad" && slices.Contains(s.Truth.Classes, "pool-queueing"):
				want = "top POOL001 high"
			}
			t.Run(name, func(t *testing.T) {
				exp, err := ruletest.Parse(strings.NewReader(want))
				if err != nil {
					t.Fatal(err)
				}
				_, res := ruletest.Diagnose(t, dir, catalog.All())
				for _, v := range ruletest.Violations(res, exp) {
					t.Error(v)
				}
				if side != "bad" || !strings.HasPrefix(want, "top POOL001") || len(res.Findings) == 0 {
					return
				}
				f := res.Findings[0]
				named := slices.ContainsFunc(s.Truth.Words, func(w string) bool {
					return strings.Contains(strings.ToLower(f.Summary+" "+f.Fix), strings.ToLower(w))
				})
				if !named {
					t.Errorf("the finding names none of %q: %s / %s", s.Truth.Words, f.Summary, f.Fix)
				}
				// The fix's measured gain lies in the range the finding states.
				_, _, low, high, ok := rules.Gain(res.Findings, 0)
				gain, _, _, measured := s.Measured.Gain()
				switch {
				case !ok || !measured:
					t.Errorf("no gain: stated %v, measured %v", ok, measured)
				case (gain < low || gain > high) && outsideRange[s.ID] == "":
					t.Errorf("measured %.2fx, stated %.2fx to %.2fx", gain, low, high)
				case gain >= low && gain <= high && outsideRange[s.ID] != "":
					t.Errorf("measured %.2fx, stated %.2fx to %.2fx: now inside, drop it from outsideRange", gain, low, high)
				}
			})
		}
	}
}

// tomcat is the Tomcat scenario's bad bundle (2 worker threads, 32
// requests in flight), the base the threshold tests change one figure of.
func tomcat(t *testing.T) *evidence.Evidence {
	t.Helper()
	ev, _ := ruletest.Diagnose(t, "../../corpus/jvm-springboot-tomcat-threads-2/bad", nil)
	return ev
}

// withLoad is ev with the load's throughput, fastest request and mean
// latency replaced.
func withLoad(ev *evidence.Evidence, throughput, fastestMS, meanMS float64) *evidence.Evidence {
	l := *ev.Load
	l.Throughput = throughput
	l.Service.Mean, l.Latency.Mean = meanMS, meanMS
	l.Table = []bundle.LoadQuantile{{Percentile: 0, MS: fastestMS}, {Percentile: 50, MS: meanMS}}
	return ev.Derive().Load(&l).Evidence()
}

// withCores is ev with the process using cores over the window.
func withCores(ev *evidence.Evidence, cores float64) *evidence.Evidence {
	d, ok := ev.SystemDelta()
	if !ok {
		panic("no system window")
	}
	end := *ev.SystemEnd
	p := *end.Process
	p.UserCPUSeconds = ev.SystemStart.Process.UserCPUSeconds + cores*d.Seconds
	p.SystemCPUSeconds = ev.SystemStart.Process.SystemCPUSeconds
	end.Process = &p
	return ev.Derive().System(ev.SystemStart, &end).Evidence()
}

func run(ev *evidence.Evidence) []rules.Finding {
	return rules.Run(facts.New(ev), []*rules.Rule{pool001.Rule}).Findings
}

// Each threshold of the rule's doc, from one side and the other, on the
// Tomcat bundle with one figure changed.
func TestThresholds(t *testing.T) {
	base := tomcat(t)
	cores := facts.Read(base, facts.WorkDone).Cores
	inService := facts.Read(base, facts.LoadQueue).InService
	for _, c := range []struct {
		name  string
		ev    *evidence.Evidence
		fires bool
	}{
		{"as recorded", base, true},
		// 2 threads: served at once from half the pool to 15% over it.
		{"served at once 0.98 of 2 threads", withLoad(base, 49, 20, 640), false},
		{"served at once 1.02 of 2 threads", withLoad(base, 51, 20, 640), true},
		{"served at once 2.3 of 2 threads", withLoad(base, 115, 20, 280), true},
		{"served at once 2.4 of 2 threads", withLoad(base, 120, 20, 270), false},
		// The wait for a turn from 20% of the latency.
		{"wait 19%", withLoad(base, 80, 21, 21/0.81), false},
		{"wait 21%", withLoad(base, 80, 21, 21/0.79), true},
		// Holds off the CPU: the process's cores over what it served at
		// once at most 0.5.
		{"cores / served at once 0.52", withCores(base, 0.52*inService), false},
		{"cores / served at once 0.48", withCores(base, 0.48*inService), true},
	} {
		got := len(run(c.ev)) > 0
		if got != c.fires {
			t.Errorf("%s: fires %v, want %v (cores %.2f)", c.name, got, c.fires, cores)
		}
	}
}

// Severity follows the least throughput the fix gives: high from 2x,
// medium from 1.25x; past 80% of the cores the CPUs are the bound. The
// load is changed so that the service serves 10 at once, the 10
// connections it holds to its database, with 31.4 in flight: sizing the
// pool to them gives 3.14x unless the CPUs cap it.
func TestSeverity(t *testing.T) {
	base := tomcat(t)
	avail := facts.Read(base, facts.WorkDone).Available
	for _, c := range []struct {
		gain float64 // the CPU cap: available / cores
		want rules.Severity
		none bool
	}{
		{gain: 5, want: rules.High},
		{gain: 2.1, want: rules.High},
		{gain: 1.9, want: rules.Medium},
		{gain: 1.3, want: rules.Medium},
		{gain: 1.2, none: true}, // 83% of the cores
	} {
		ev := withLoad(withCores(base, avail/c.gain), 476, 21, 66)
		fs := run(ev)
		switch {
		case c.none && len(fs) > 0:
			t.Errorf("CPU cap %.1fx: %s", c.gain, fs[0].Severity)
		case c.none:
		case len(fs) == 0:
			t.Errorf("CPU cap %.1fx: nothing", c.gain)
		case fs[0].Severity != c.want:
			t.Errorf("CPU cap %.1fx: %s, want %s (%s)", c.gain, fs[0].Severity, c.want, fs[0].Summary)
		case math.Abs(1/(1-fs[0].Impact)-math.Min(c.gain, 476*0.066/10)) > 0.01*c.gain:
			t.Errorf("CPU cap %.1fx: impact %.3f", c.gain, fs[0].Impact)
		}
	}
}

// fpm is PHP-FPM with 2 children behind a web server, under 32 closed-loop
// clients, its listener holding queued connections at the window's end:
// the load's fastest request (315 ms against a 343 ms mean) carries a whole
// turn of the strictly first-come-first-served queue.
func fpm(queued uint64, held bool) *evidence.Evidence {
	stacks := testprof.Build(testprof.Stack{Value: 100, Funcs: []string{"tcp_sendmsg", "__x64_sys_sendto", "send", "[unknown] php-fpm8.2"}})
	at := time.Date(2026, 11, 28, 6, 0, 0, 0, time.UTC)
	snap := func(after time.Duration, cpu float64) *bundle.SystemSnapshot {
		return &bundle.SystemSnapshot{Time: at.Add(after), Machine: bundle.MachineInfo{NumCPU: 2},
			Process: &bundle.ProcessInfo{PID: 10, Comm: "php-fpm8.2", StartTime: 1, Threads: 1},
			Children: []bundle.ProcessInfo{
				{PID: 11, Comm: "php-fpm8.2", StartTime: 2, Threads: 1, UserCPUSeconds: cpu},
				{PID: 12, Comm: "php-fpm8.2", StartTime: 2, Threads: 1, UserCPUSeconds: cpu}},
			Net: &bundle.NetInfo{ProcessSockets: true, Listeners: []bundle.Listener{
				{Addr: "0.0.0.0:80", Queue: 0}, {Addr: "127.0.0.1:9000", Queue: queued, Process: held}}}}
	}
	ev := testprof.Evidence(map[evidence.Kind]*profile.Profile{evidence.CPU: stacks, evidence.Perf: stacks})
	// 0.055 of 2 cores over 20 s, the two children alike.
	ev.SystemStart, ev.SystemEnd = snap(0, 1), snap(20*time.Second, 1.55)
	ev.Load = &bundle.LoadResult{URL: "http://127.0.0.1:8080/page.php", Mode: "closed", Concurrency: 32, DurationMS: 20000,
		Requests: 1850, Throughput: 92.5, Service: bundle.LoadPercentiles{Mean: 343}, Latency: bundle.LoadPercentiles{Mean: 343},
		Table: []bundle.LoadQuantile{{Percentile: 0, MS: 315}, {Percentile: 50, MS: 340}}}
	return ev
}

// The accept queue of the listener PHP-FPM's master holds shows the queue
// in front of its 2 children that the load's latencies cannot: 30 of the
// 31.7 requests in flight wait there, 1.7 are served at once.
func TestAcceptQueueInFrontOfAPool(t *testing.T) {
	fs := run(fpm(30, true))
	if len(fs) != 1 {
		t.Fatalf("want one finding: %+v", fs)
	}
	f := fs[0]
	if f.Severity != rules.High || !strings.Contains(f.Summary, "Requests wait 95% of their time for PHP-FPM's children: 2 workers") ||
		!strings.Contains(f.Summary, "1.7 served at once") || !strings.Contains(f.Fix, "pm.max_children") {
		t.Errorf("%s %q\n%s", f.Severity, f.Summary, f.Fix)
	}
	// Sized to the 31.7 in flight: 15.9x with today's holds (31.7 / 2),
	// at most 18.3x (31.73 / 1.73).
	if r := f.ImpactRange; r == nil || math.Abs(1/(1-r[0])-15.86) > 0.1 || math.Abs(1/(1-r[1])-18.34) > 0.1 {
		t.Errorf("range %v", r)
	}
	// No queue, or a queue on a listener another process holds (the web
	// server in front): nothing shows the pool.
	for name, ev := range map[string]*evidence.Evidence{"no queue": fpm(0, true), "someone else's listener": fpm(30, false), "2 queued": fpm(2, true)} {
		if fs := run(ev); len(fs) != 0 {
			t.Errorf("%s: %+v", name, fs[0])
		}
	}
}

// HikariCP at 1 connection with 31 requests in flight: the least the fix
// gives is going back to the library's default of 10 (the fix measured,
// 10.8x), not sizing the pool to the requests in flight, where the CPUs
// allow more than 10x; where they allow less, the CPUs' cap is the least.
func TestPoolBackToItsDefault(t *testing.T) {
	ev, _ := ruletest.Diagnose(t, "../../corpus/jvm-springboot-hikari-pool-1/bad", nil)
	for _, c := range []struct {
		cores, low float64
	}{{0.1, 10}, {0.25, 8}} {
		fs := run(withCores(ev, c.cores))
		if len(fs) != 1 || fs[0].ImpactRange == nil {
			t.Fatalf("%.2f cores: %+v", c.cores, fs)
		}
		if low := 1 / (1 - fs[0].ImpactRange[0]); math.Abs(low-c.low) > 0.01 {
			t.Errorf("%.2f cores of 2: least gain %.2fx, want %.2fx", c.cores, low, c.low)
		}
	}
}

// Jetty with 8 threads (6 serving requests) in front of HikariCP's 10
// connections: served at once 5.14 (as recorded once the JIT had settled)
// is 0.51 of 10, inside the matching window, yet the 10 connections are
// the next bound, where the fix queues (1.74x measured), not the same pool.
func TestNextBoundLargerThanThePool(t *testing.T) {
	base, _ := ruletest.Diagnose(t, "../../corpus/jvm-springboot-jetty-threads-8/bad", nil)
	fs := run(withLoad(base, 249, 20.64, 128.22))
	if len(fs) != 1 || fs[0].ImpactRange == nil {
		t.Fatalf("%+v", fs)
	}
	if low := 1 / (1 - fs[0].ImpactRange[0]); math.Abs(low-10.0/6) > 0.01 {
		t.Errorf("least gain %.2fx, want 1.67x (10 connections over 6 serving threads): %s", low, fs[0].ImpactBasis)
	}
}
