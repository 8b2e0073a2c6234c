package cfg001_test

import (
	"math"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/pprof/profile"

	"github.com/perfdoctor/perfdoctor/bundle"
	"github.com/perfdoctor/perfdoctor/evidence"
	"github.com/perfdoctor/perfdoctor/facts"
	"github.com/perfdoctor/perfdoctor/internal/testprof"
	"github.com/perfdoctor/perfdoctor/rules"
	"github.com/perfdoctor/perfdoctor/rules/catalog"
	"github.com/perfdoctor/perfdoctor/rules/cfg001"
	"github.com/perfdoctor/perfdoctor/rules/ruletest"
)

// handler, gc and the delivery of an answer, as a Go service's CPU
// profile shows them (leaf first).
var (
	handlerWork = []string{"main.render", "main.(*server).handle", "net/http.HandlerFunc.ServeHTTP", "net/http.serverHandler.ServeHTTP", "net/http.(*conn).serve"}
	gcWork      = []string{"runtime.scanobject", "runtime.gcDrain", "runtime.gcBgMarkWorker"}
	writeWork   = []string{"internal/poll.(*FD).Write", "net.(*conn).Write", "net/http.checkConnErrorWriter.Write", "bufio.(*Writer).Flush", "net/http.(*response).finishRequest", "net/http.(*conn).serve"}
	barrierWork = []string{"runtime.gcWriteBarrier", "main.(*index).link", "main.(*server).handle", "net/http.serverHandler.ServeHTTP", "net/http.(*conn).serve"}
	jitWork     = []string{"PhaseChaitin::Split", "C2Compiler::compile_method", "CompileBroker::invoke_compiler_on_method", "CompileBroker::compiler_thread_loop", "JavaThread::thread_main_inner"}
	logWork     = []string{"log/slog.(*TextHandler).Handle", "log/slog.(*Logger).log", "log/slog.(*Logger).Debug", "main.(*server).handle", "net/http.serverHandler.ServeHTTP", "net/http.(*conn).serve"}
)

// service is the evidence of a Go service whose CPU profile holds the
// given samples (out of 1000) and which was started with cmdline and the
// Go tuning variables env; live is its live heap.
func service(cmdline string, env map[string]string, live uint64, samples map[*[]string]int64) *evidence.Evidence {
	var stacks []testprof.Stack
	rest := int64(1000)
	for funcs, n := range samples {
		stacks = append(stacks, testprof.Stack{Value: n, Funcs: *funcs})
		rest -= n
	}
	stacks = append(stacks, testprof.Stack{Value: rest, Funcs: []string{"main.other", "main.(*server).handle", "net/http.serverHandler.ServeHTTP", "net/http.(*conn).serve"}})
	ev := testprof.Evidence(map[evidence.Kind]*profile.Profile{evidence.CPU: testprof.Build(stacks...)})
	proc := &bundle.ProcessInfo{PID: 42, Cmdline: cmdline, Executable: strings.Fields(cmdline)[0], GoEnv: env}
	ev.SystemEnd = &bundle.SystemSnapshot{Time: time.Now(), Process: proc, Machine: bundle.MachineInfo{NumCPU: 2, MemTotalBytes: 8 << 30}}
	if live > 0 {
		ev.MetricsEnd = &bundle.RuntimeStats{HeapAlloc: live}
	}
	return ev
}

func run(t *testing.T, ev *evidence.Evidence) []rules.Finding {
	t.Helper()
	res := rules.Run(facts.New(ev), []*rules.Rule{cfg001.Rule})
	if len(res.NotChecked) > 0 {
		t.Fatalf("not checked: %+v", res.NotChecked)
	}
	return res.Findings
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-6 }

func TestGOGCBelowTheDefaultUnderABusyCollector(t *testing.T) {
	fs := run(t, service("/srv/api", map[string]string{"GOGC": "20"}, 16<<20, map[*[]string]int64{&gcWork: 400}))
	if len(fs) != 1 {
		t.Fatalf("want one finding, got %d", len(fs))
	}
	f := fs[0]
	// GC at 40%: GOGC=100 makes cycles 5x rarer, 80% of the GC's share
	// at least, all of it at most, the estimate midway.
	if !near(f.Impact, 0.36) || f.ImpactRange == nil || !near(f.ImpactRange[0], 0.32) || !near(f.ImpactRange[1], 0.40) {
		t.Errorf("impact %.3f range %v, want 0.36 [0.32, 0.40]", f.Impact, f.ImpactRange)
	}
	if f.Severity != rules.High || !strings.Contains(f.Summary, "GOGC=20 (environment)") || !strings.Contains(f.Fix, "perfdoctor try") {
		t.Errorf("%s: %s / %s", f.Severity, f.Summary, f.Fix)
	}
	if f.Config == nil || f.Config.String() != "GOGC=100" {
		t.Errorf("config fix %v, want GOGC=100", f.Config)
	}
	if f.RemovesWork {
		t.Error("GOGC=100 makes the cycles rarer, it does not remove them: the range has a top")
	}
	if f.Claim == nil || f.Claim.Level != rules.LevelConfig {
		t.Errorf("claim %+v, want the config level", f.Claim)
	}
}

// The write barrier is on only while the collector marks: GOGC=100 takes
// the same 80% of it as of the GC.
func TestGOGCCountsTheWriteBarriers(t *testing.T) {
	fs := run(t, service("/srv/api", map[string]string{"GOGC": "20"}, 16<<20, map[*[]string]int64{&gcWork: 300, &barrierWork: 100}))
	if len(fs) != 1 {
		t.Fatalf("want one finding, got %d", len(fs))
	}
	f := fs[0]
	if !near(f.Impact, 0.36) || f.ImpactRange == nil || !near(f.ImpactRange[0], 0.32) || !near(f.ImpactRange[1], 0.40) {
		t.Errorf("impact %.3f range %v, want 0.36 [0.32, 0.40]", f.Impact, f.ImpactRange)
	}
	if !strings.Contains(f.ImpactBasis, "write barriers' 10%") {
		t.Errorf("basis does not name the barriers: %s", f.ImpactBasis)
	}
	// Barriers alone are not a busy collector.
	if fs := run(t, service("/srv/api", map[string]string{"GOGC": "20"}, 16<<20, map[*[]string]int64{&gcWork: 40, &barrierWork: 100})); len(fs) != 0 {
		t.Errorf("GC at 4%%: %s", fs[0].Summary)
	}
}

func TestGOGCSilentAtTheDefaultOrAnIdleCollector(t *testing.T) {
	for name, ev := range map[string]*evidence.Evidence{
		"GOGC=100":              service("/srv/api", map[string]string{"GOGC": "100"}, 16<<20, map[*[]string]int64{&gcWork: 400}),
		"GOGC unset":            service("/srv/api", map[string]string{}, 16<<20, map[*[]string]int64{&gcWork: 400}),
		"GOGC=400":              service("/srv/api", map[string]string{"GOGC": "400"}, 16<<20, map[*[]string]int64{&gcWork: 400}),
		"GOGC=20, GC at 4%":     service("/srv/api", map[string]string{"GOGC": "20"}, 16<<20, map[*[]string]int64{&gcWork: 40}),
		"a generous GOMEMLIMIT": service("/srv/api", map[string]string{"GOMEMLIMIT": "1GiB"}, 48<<20, map[*[]string]int64{&gcWork: 300}),
	} {
		if fs := run(t, ev); len(fs) != 0 {
			t.Errorf("%s: %s", name, fs[0].Summary)
		}
	}
}

func TestGOMEMLIMITAtTheLiveHeap(t *testing.T) {
	fs := run(t, service("/srv/api", map[string]string{"GOMEMLIMIT": "48MiB"}, 48<<20, map[*[]string]int64{&gcWork: 500}))
	if len(fs) != 1 {
		t.Fatalf("want one finding, got %d", len(fs))
	}
	f := fs[0]
	if !strings.Contains(f.Summary, "death spiral") || !near(f.Impact, 0.5) {
		t.Errorf("impact %.3f: %s", f.Impact, f.Summary)
	}
	// Room for GOGC=100 over 48 MiB, and a tenth more: 105 MiB.
	if f.Config == nil || f.Config.String() != "GOMEMLIMIT=105MiB" {
		t.Errorf("config fix %v", f.Config)
	}
	// A limit set in code: named as such, and nothing for try to apply.
	ev := service("/srv/api", map[string]string{}, 48<<20, map[*[]string]int64{&gcWork: 500})
	ev.MetricsEnd.Runtime = &bundle.RuntimeMetrics{GOGC: 100, GOMEMLIMIT: 48 << 20}
	fs = run(t, ev)
	if len(fs) != 1 || !strings.Contains(fs[0].Summary, "set in code") || fs[0].Config != nil {
		t.Fatalf("a limit set in code: %+v", fs)
	}
	// GOGC=off leaves the limit alone to pace the collector.
	fs = run(t, service("/srv/api", map[string]string{"GOGC": "off", "GOMEMLIMIT": "50MiB"}, 48<<20, map[*[]string]int64{&gcWork: 500}))
	if len(fs) != 1 || !strings.Contains(fs[0].Summary, "death spiral") {
		t.Fatalf("GOGC=off at the limit: %+v", fs)
	}
	if fs := run(t, service("/srv/api", map[string]string{"GOGC": "off", "GOMEMLIMIT": "1GiB"}, 48<<20, map[*[]string]int64{&gcWork: 500})); len(fs) != 0 {
		t.Errorf("GOGC=off under a generous limit: %s", fs[0].Summary)
	}
	// 90 MiB over a 76 MiB live heap (the etcd): the limit leaves
	// room for an effective GOGC of 18, not a spiral, still the cause.
	fs = run(t, service("/srv/api", map[string]string{"GOMEMLIMIT": "90MiB"}, 76<<20, map[*[]string]int64{&gcWork: 500}))
	if len(fs) != 1 || strings.Contains(fs[0].Summary, "spiral") || !strings.Contains(fs[0].Summary, "as if GOGC were 18") {
		t.Fatalf("90 MiB over 76 MiB: %+v", fs)
	}
}

func TestCacheTurnedOffByAFlag(t *testing.T) {
	off := "/opt/vm/victoria-metrics -httpListenAddr=127.0.0.1:8428 -search.disableCache -loggerLevel=ERROR"
	fs := run(t, service(off, nil, 0, map[*[]string]int64{&writeWork: 200, &gcWork: 50}))
	if len(fs) != 1 {
		t.Fatalf("want one finding, got %d", len(fs))
	}
	f := fs[0]
	// 750 of 1000 samples compute: outside the writes and the GC, which
	// the garbage the computing made may be part of.
	if !near(f.Impact, 0.775) || !near(f.ImpactRange[0], 0.75) || !near(f.ImpactRange[1], 0.80) || !strings.Contains(f.Summary, "-search.disableCache") {
		t.Errorf("impact %.3f range %v: %s", f.Impact, f.ImpactRange, f.Summary)
	}
	if !f.RemovesWork {
		t.Error("a cache hit computes nothing: the fix removes the work, a floor and no top")
	}
	// The same flag where delivering the answers is most of the work.
	if fs := run(t, service(off, nil, 0, map[*[]string]int64{&writeWork: 750})); len(fs) != 0 {
		t.Errorf("computation at 25%%: %s", fs[0].Summary)
	}
	// Caches left on, however they are spelled.
	for _, cmd := range []string{"/srv/api -cache-size=512MB", "/srv/api --query.cache.enabled=true", "/srv/api -disableCache=false", "/srv/api -cacheDir /var/cache/api", "/srv/java -jar app.jar --spring.cache.type=caffeine"} {
		if fs := run(t, service(cmd, nil, 0, nil)); len(fs) != 0 {
			t.Errorf("%s: %s", cmd, fs[0].Summary)
		}
	}
	for _, cmd := range []string{"/srv/api --no-cache", "/srv/api --query.cache.enabled=false", "/srv/api -cache.size=0", "/srv/api -disable-cache true", "/srv/java -jar app.jar --spring.cache.type=none"} {
		if fs := run(t, service(cmd, nil, 0, nil)); len(fs) != 1 {
			t.Errorf("%s: %d findings, want the cache named", cmd, len(fs))
		}
	}
}

func TestDebugLogLevel(t *testing.T) {
	fs := run(t, service("/srv/api -log-level debug -listen :8080", nil, 0, map[*[]string]int64{&logWork: 300}))
	if len(fs) != 1 || !strings.Contains(fs[0].Summary, "-log-level debug") || !near(fs[0].Impact, 0.3) {
		t.Fatalf("want the debug level named at 30%%: %+v", fs)
	}
	if r := fs[0].ImpactRange; r == nil || !near(r[1], 0.3) {
		t.Errorf("range %v, want its top at the logging's 30%% (no GC, no compiling)", r)
	}
	if !fs[0].RemovesWork {
		t.Error("at INFO a debug record is a level comparison: the fix removes the work, a floor and no top")
	}
	// A JVM still compiling: the range's top counts the compilers too,
	// the point half of them.
	fs = run(t, service("/srv/api -log-level debug", nil, 0, map[*[]string]int64{&logWork: 300, &jitWork: 200}))
	if len(fs) != 1 || !near(fs[0].Impact, 0.4) || fs[0].ImpactRange == nil || !near(fs[0].ImpactRange[0], 0.3) || !near(fs[0].ImpactRange[1], 0.5) {
		t.Fatalf("want 40%% [30%%, 50%%] with the compilers at 20%%: %+v", fs)
	}
	if fs[0].Severity != rules.High {
		t.Errorf("severity %s, want high from the loggers' own 30%%", fs[0].Severity)
	}
	if fs := run(t, service("/srv/api -v=5", nil, 0, map[*[]string]int64{&logWork: 300})); len(fs) != 1 {
		t.Errorf("klog -v=5: %d findings", len(fs))
	}
	for name, ev := range map[string]*evidence.Evidence{
		"info level":         service("/srv/api -log-level info", nil, 0, map[*[]string]int64{&logWork: 300}),
		"debug, little logs": service("/srv/api --log.level=debug", nil, 0, map[*[]string]int64{&logWork: 40}),
		"klog -v=2":          service("/srv/api -v=2", nil, 0, map[*[]string]int64{&logWork: 300}),
	} {
		if fs := run(t, ev); len(fs) != 0 {
			t.Errorf("%s: %s", name, fs[0].Summary)
		}
	}
}

// A switch that turns debug or trace logging on: --debug, --trace and
// --verbose for any program, a known program's own letters (nats-server's
// -DV); a program's own logging helpers (traceMsg) count with the loggers.
// A letter another program reads otherwise (-D, -V) says nothing.
func TestDebugSwitches(t *testing.T) {
	traceWork := []string{"fmt.Sprintf", "main.(*client).traceMsg", "main.(*client).deliver"}
	traced := []string{"log.(*Logger).output", "log.(*Logger).Printf", "main.(*client).traceMsg", "main.(*client).deliver"}
	for _, cmd := range []string{"/opt/nats-server -p 4222 -DV", "/srv/api --trace", "/srv/api --debug=true"} {
		fs := run(t, service(cmd, nil, 0, map[*[]string]int64{&traced: 300, &traceWork: 100}))
		if len(fs) != 1 || !strings.Contains(fs[0].Summary, "turns on debug or trace logging: logging takes 40% of CPU") || !strings.Contains(fs[0].Fix, "Start it without") {
			t.Fatalf("%s: want the switch named at 40%%: %+v", cmd, fs)
		}
	}
	for _, cmd := range []string{"/srv/api -p 4222 -DV", "/opt/nats-server -p 4222", "/srv/api --debug=false", "/srv/api -d"} {
		if fs := run(t, service(cmd, nil, 0, map[*[]string]int64{&traced: 300, &traceWork: 100})); len(fs) != 0 {
			t.Errorf("%s: %s", cmd, fs[0].Summary)
		}
	}
}

// Third-party servers from the real-server corpus, recorded under a
// setting (or healthy): the setting is the top finding where the fix
// measured was changing it, and nothing of this rule above low elsewhere.
func TestCorpusServers(t *testing.T) {
	for scenario, want := range map[string]string{
		"go-prometheus-gogc-20": `top CFG001 high "GOGC=20" "5x"
after GC001 CFG001`,
		"go-victoriametrics-cache-disabled": `top CFG001 high "-search.disableCache"
after CPU001 CFG001`,
		"jvm-springboot-debug-logging": `top CFG001 medium "logging.level.root=DEBUG"
after LIB008 CFG001`,
		// A pool's size is pool-queueing's to name, with its waits.
		"jvm-springboot-hikari-pool-1":    `never CFG001`,
		"jvm-springboot-tomcat-threads-2": `never CFG001`,
		// Saturated cores (a pool cannot be what waits) and nothing set.
		"go-caddy-encode-gzip-9":           `never CFG001`,
		"go-coredns-forward-no-cache":      `never CFG001`,
		"jvm-jetty-static-healthy":         `never CFG001`,
		"jvm-tomcat-jsp-healthy":           `never CFG001`,
		"jvm-zookeeper-reads-healthy":      `never CFG001`,
		"jvm-zookeeper-tight-heap-healthy": `never CFG001 medium`,
	} {
		t.Run(scenario, func(t *testing.T) {
			exp, err := ruletest.Parse(strings.NewReader(want))
			if err != nil {
				t.Fatal(err)
			}
			dir := filepath.Join("..", "..", "corpus", scenario, "bad")
			_, res := ruletest.Diagnose(t, dir, catalog.All())
			for _, v := range ruletest.Violations(res, exp) {
				t.Error(v)
			}
		})
	}
}
