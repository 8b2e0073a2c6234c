// Package javacases runs the casebook's JVM cases end to end: each service
// is a Java program compiled with javac by the test, loaded on loopback,
// recorded with `perfdoctor collect --jfr` and diagnosed with the perfdoctor
// binary, as a user would.
//
// Each diagnosis is held to the case's expectations in want.txt's format
// (rules/ruletest). Under PERFDOCTOR_CASEBOOK_BUNDLES=DIR each bundle is
// kept as DIR/jdkN/<case>-<variant> with them, which casebook/record-jvm.sh
// moves into casebook/testdata/recorded for casebook's TestRecorded to
// diagnose offline. Live, only the collection path's smoke runs by default
// (TestE5AsyncProfiler, TestJVMFallsBackToJFR and J2's JFR case); the other
// cases run when PERFDOCTOR_CASEBOOK_JVM_CASES names them (e4,e5,j1,j3 or
// all), and skip saying so otherwise.
package javacases

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/perfdoctor/perfdoctor/casebook/internal/harness"
	"github.com/perfdoctor/perfdoctor/collect/jvm"
	"github.com/perfdoctor/perfdoctor/evidence"
	"github.com/perfdoctor/perfdoctor/internal/jvmtest"
	"github.com/perfdoctor/perfdoctor/load"
	"github.com/perfdoctor/perfdoctor/rules"
	"github.com/perfdoctor/perfdoctor/rules/ruletest"
)

var perfdoctor string

func TestMain(m *testing.M) {
	harness.Main(m, "java", map[string]*string{harness.Perfdoctor: &perfdoctor}, jvmtest.Cleanup)
}

// need skips (fails under CI) without a JDK's tools.
func need(t *testing.T) {
	t.Helper()
	harness.Need(t, "a JDK 17 or later (openjdk-17-jdk-headless)", "java", "javac", "jcmd", "jfr")
}

// springCoreEnv names the spring-core jar that scripts/test.sh fetches
// from Maven Central (with its checksum checked) for case E4.
const springCoreEnv = "PERFDOCTOR_SPRING_CORE_JAR"

func springCore(t *testing.T) string {
	t.Helper()
	jar := os.Getenv(springCoreEnv)
	if jar == "" {
		if harness.InCI() {
			t.Fatalf("CI is set and %s is not: scripts/test.sh fetches spring-core", springCoreEnv)
		}
		t.Skipf("skipped: %s is not set (scripts/test.sh fetches spring-core 5.3.39 from Maven Central)", springCoreEnv)
	}
	if _, err := os.Stat(jar); err != nil {
		t.Fatalf("%s: %v", springCoreEnv, err)
	}
	return jar
}

// service is a running Java casebook variant.
type service struct {
	pid int
	url string
}

// start compiles src with javac (once per source and JDK: jvmtest.Classes)
// and runs mainClass with the variant, waiting for its "app=URL" line.
func start(t *testing.T, src, mainClass, variant string, classpath ...string) *service {
	t.Helper()
	return startOn(t, jdk{}, src, mainClass, variant, classpath...)
}

// jdk is where a service's javac and java come from: bin ("" for PATH),
// with extra JVM options.
type jdk struct {
	bin  string
	opts []string
}

func (j jdk) tool(name string) string { return filepath.Join(j.bin, name) }

// startOn is start on the given JDK.
func startOn(t *testing.T, j jdk, src, mainClass, variant string, classpath ...string) *service {
	t.Helper()
	classes := jvmtest.Classes(t, j.tool("javac"), src, classpath...)
	// nodelay: the JDK's HTTP server otherwise waits on delayed ACKs between
	// headers and body, and every variant would measure 40 ms round trips.
	// JFR's repository in the test's directory: a JVM stopped by a signal
	// leaves it behind, and /tmp filled with them.
	cmd := exec.Command(j.tool("java"), append(append([]string{"-Xmx256m", "-Dsun.net.httpserver.nodelay=true",
		"-XX:FlightRecorderOptions:repository=" + t.TempDir()}, j.opts...),
		"-cp", strings.Join(append([]string{classes}, classpath...), ":"), mainClass, variant)...)
	url := harness.Start(t, cmd, "app=", 30*time.Second)
	return &service{pid: cmd.Process.Pid, url: url}
}

// plan is how one variant is recorded and what its diagnosis must show.
type plan struct {
	// name is the bundle's name when kept: DIR/jdkN/<name> under
	// PERFDOCTOR_CASEBOOK_BUNDLES=DIR.
	name string
	// want is what the diagnosis must show, in want.txt's format
	// (rules/ruletest); a kept bundle keeps it as its want.txt, which
	// casebook's TestRecorded holds the recording to offline.
	want string
	// needCPU: the case is judged from CPU samples, so a window with too
	// few is recorded again; cases judged from thread events record once.
	needCPU bool
	flag    string   // collect's JVM flag, --jfr or --jvm
	args    []string // collect's further arguments
}

// diagnose warms the JVM up, then records it with `perfdoctor collect`
// (v.flag) during a bounded closed-loop load, diagnoses the bundle with the
// perfdoctor binary and holds the findings to v.want. It returns the
// findings, the bundle and the throughput measured while recording. On a
// busy machine a window can hold too few CPU samples for the rules; it then
// records again over a window twice as long, at most three times, rather
// than judge thin evidence (unless !v.needCPU).
func diagnose(t *testing.T, s *service, v plan) ([]harness.Finding, string, float64) {
	t.Helper()
	// Thread events need no JIT-compiled steady state, and four one-second
	// CPU load readings are enough: shorter runs keep CI time bounded.
	warmup, window := 3*time.Second, 6*time.Second
	if !v.needCPU {
		warmup, window = time.Second, 4*time.Second
	}
	if _, err := load.Run(context.Background(), load.Config{URL: s.url, Concurrency: 4, Duration: warmup}); err != nil {
		t.Fatalf("warm-up load: %v", err)
	}
	for attempt := 1; ; attempt++ {
		bundleDir, _, rps := recordUnderLoad(t, s, window, v.flag, v.args...)
		ev, err := evidence.Load(t.Context(), evidence.LoadOptions{}, bundleDir)
		if err != nil {
			t.Fatalf("load the bundle: %v", err)
		}
		n := evidence.SampleCount(ev.Profile(evidence.CPU))
		if n >= rules.MinCPUSamples || attempt == 3 || !v.needCPU {
			t.Logf("%d CPU samples over %s (attempt %d)", n, window, attempt)
			logThreads(t, ev)
			bundleDir = keep(t, bundleDir, ev.JVM.JDK(), v)
			findings := harness.Diagnose(t, perfdoctor, bundleDir).Findings
			harness.Expect(t, findings, v.want)
			return findings, bundleDir, rps
		}
		t.Logf("only %d CPU samples over %s (a busy machine?): recording again over %s", n, window, 2*window)
		window *= 2
	}
}

// bundlesEnv names the directory where the tests keep the bundles they
// diagnose, as casebook/record-jvm.sh does to record them.
const bundlesEnv = "PERFDOCTOR_CASEBOOK_BUNDLES"

// keep moves the bundle at dir to DIR/jdkN/<v.name> with v.want as its
// want.txt under PERFDOCTOR_CASEBOOK_BUNDLES=DIR (N the JVM's release),
// and returns where it is; without the variable it leaves it where it is.
func keep(t *testing.T, dir string, release int, v plan) string {
	t.Helper()
	root := os.Getenv(bundlesEnv)
	if root == "" {
		return dir
	}
	if release == 0 {
		t.Fatal("the bundle does not say the JVM's release: cannot keep it")
	}
	kept := filepath.Join(root, "jdk"+strconv.Itoa(release), v.name)
	if err := os.RemoveAll(kept); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(kept), 0o755); err != nil {
		t.Fatal(err)
	}
	// The bundle is in the test's temporary directory, maybe on another
	// file system than DIR: copied, not renamed.
	if err := os.CopyFS(kept, os.DirFS(dir)); err != nil {
		t.Fatalf("keep the bundle: %v", err)
	}
	if err := os.WriteFile(filepath.Join(kept, ruletest.WantFile), []byte(v.want), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("bundle kept in %s", kept)
	return kept
}

// recordUnderLoad records the service with collect flag (--jfr or --jvm)
// over window while a closed-loop load runs, and returns the bundle, what
// collect printed and the throughput.
func recordUnderLoad(t *testing.T, s *service, window time.Duration, flag string, args ...string) (string, string, float64) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	type result struct {
		r   *load.Result
		err error
	}
	loaded := make(chan result, 1)
	go func() {
		// The collection waits up to jvm.DefaultSettle for the JIT before
		// its window; the load is stopped when the collection ends.
		r, err := load.Run(ctx, load.Config{URL: s.url, Concurrency: 4, Duration: window + jvm.DefaultSettle + 20*time.Second})
		loaded <- result{r, err}
	}()
	bundleDir := filepath.Join(t.TempDir(), "bundle")
	out, err := exec.Command(perfdoctor, append([]string{"collect", flag, strconv.Itoa(s.pid), "-d", window.String(), "-o", bundleDir}, args...)...).CombinedOutput()
	cancel()
	lr := <-loaded
	if err != nil {
		t.Fatalf("perfdoctor collect %s: %v\n%s", flag, err, out)
	}
	if lr.err != nil {
		t.Fatalf("load: %v", lr.err)
	}
	if lr.r.Errors > 0 {
		t.Errorf("load: %d errors (%v)", lr.r.Errors, lr.r.ErrorsByKind)
	}
	t.Logf("throughput while recording: %.0f requests/s (%s)", lr.r.Throughput, lr.r)
	return bundleDir, string(out), lr.r.Throughput
}

// jvmCase is a JVM casebook case with a bad and a fixed variant.
type jvmCase struct {
	name  string // e5, j2...: its bundles are kept as <name>-bad and <name>-fixed
	title string
	// class is the finding class of the case: the bad variant's top
	// finding, never above low on the fixed one.
	class string
	// needCPU: judged from CPU samples (see plan.needCPU).
	needCPU bool
}

// want is what a diagnosis of the variant must show, as a want.txt.
func (c jvmCase) want(variant string) string {
	head := fmt.Sprintf("# casebook %s, %s variant: %s\n", c.name, variant, c.title)
	if variant == "bad" {
		return head + "top " + c.class + "\n"
	}
	return head + "never " + c.class + " medium\n"
}

// casesEnv names the environment variable that selects the JVM cases run
// live: a comma-separated list of case names (e4,e5,j1,j2,j3) or all.
// Unset, only smokeCase runs live, with TestE5AsyncProfiler and
// TestJVMFallsBackToJFR (which always run): the collection path, JFR's
// and async-profiler's, end to end. Every case's recorded bundles are
// diagnosed offline by casebook's TestRecorded (casebook/record-jvm.sh
// records them).
const casesEnv = "PERFDOCTOR_CASEBOOK_JVM_CASES"

// smokeCase is the JFR case run live without casesEnv (and so in CI).
const smokeCase = "j2"

// cases are the JVM cases' names, for casesEnv.
var cases = []string{"e4", "e5", "j1", "j2", "j3"}

// live skips the test of case name unless casesEnv selects it, visibly.
func live(t *testing.T, name string) {
	t.Helper()
	v := os.Getenv(casesEnv)
	if v == "" {
		v = smokeCase
	}
	if v == "all" {
		return
	}
	asked := strings.Split(v, ",")
	for _, a := range asked {
		if !slices.Contains(cases, a) {
			t.Fatalf("%s=%s: no JVM case %q (cases: %s, or all)", casesEnv, v, a, strings.Join(cases, ","))
		}
	}
	if !slices.Contains(asked, name) {
		t.Skipf("skipped: %s runs live only when asked (%s=%s or all); its recorded bundles are diagnosed offline by casebook's TestRecorded", name, casesEnv, name)
	}
}

// check runs both variants of case c, each recorded with collect --jfr and
// held to c.want; run starts the variant.
func check(t *testing.T, c jvmCase, run func(t *testing.T, variant string) *service) {
	var rps [2]float64
	for i, variant := range []string{"bad", "fixed"} {
		t.Run(variant, func(t *testing.T) {
			_, _, rps[i] = diagnose(t, run(t, variant), plan{
				name: c.name + "-" + variant, want: c.want(variant), needCPU: c.needCPU, flag: "--jfr"})
		})
	}
	t.Logf("throughput while recording: bad %.0f, fixed %.0f requests/s", rps[0], rps[1])
}

// TestE5ExceptionOverhead: exceptions thrown and swallowed per request.
// Live only when asked (PERFDOCTOR_CASEBOOK_JVM_CASES=e5).
func TestE5ExceptionOverhead(t *testing.T) {
	live(t, "e5")
	need(t)
	check(t, e5, func(t *testing.T, variant string) *service {
		return start(t, "e5/Login.java", "casebook.e5.Login", variant)
	})
}

var e5 = jvmCase{"e5", "E5: a login service parsing absent parameters with Integer.parseInt, the exception swallowed", "exception-overhead", true}

// TestE4FrameworkRouting: AntPathMatcher over every route per request.
// Live only when asked (PERFDOCTOR_CASEBOOK_JVM_CASES=e4).
func TestE4FrameworkRouting(t *testing.T) {
	live(t, "e4")
	need(t)
	jar := springCore(t)
	check(t, jvmCase{"e4", "E4: Spring's AntPathMatcher over sixty routes per request", "framework-routing-cost", true},
		func(t *testing.T, variant string) *service {
			return start(t, "e4/Routes.java", "casebook.e4.Routes", variant, jar)
		})
}

// logThreads logs what the JVM thread rules (JVM009 to JVM014) read, the
// figures their thresholds are set against.
func logThreads(t *testing.T, ev *evidence.Evidence) {
	t.Helper()
	s := ev.JVM
	if s == nil {
		return
	}
	if d, ok := ev.SystemDelta(); ok && d.Start.Process != nil && d.End.Process != nil {
		a, b := d.Start.Process, d.End.Process
		t.Logf("the JVM's own context switches: %.0f/s", float64(b.VoluntaryCtxt+b.NonvoluntaryCtxt-a.VoluntaryCtxt-a.NonvoluntaryCtxt)/d.Seconds)
	}
	th := s.Threading
	var pinned, locked time.Duration
	for _, w := range th.Pinned {
		pinned += w.Total
	}
	for _, w := range th.LockWaits {
		locked += w.Total
	}
	cpus := max(float64(s.HWThreads), 1)
	span := max(s.Span().Seconds(), 1e-9)
	t.Logf("threads: pinned %s, lock waits %.2f per CPU, context switches %.0f/s per CPU, JVM CPU %.0f%%, machine %.0f%%",
		pinned, locked.Seconds()/span/cpus, th.ContextSwitchRate/cpus, 100*s.JVMCPU, 100*s.MachineCPU)
	for _, p := range th.Pools[:min(len(th.Pools), 4)] {
		w := max(p.Window.Seconds(), 1e-9)
		n := float64(p.Threads)
		top := 0.0
		if p.Samples > 0 {
			top = float64(p.BusiestSamples) / float64(p.Samples)
		}
		t.Logf("pool %s: %d threads, executor %v, idle %.0f%%, blocked %.0f%%, locked %.0f%%, busiest thread %.0f%% of %d samples",
			p.Name, p.Threads, p.Executor, 100*p.Idle.Seconds()/w/n, 100*p.Blocked.Seconds()/w/n, 100*p.Locked.Seconds()/w/n, 100*top, p.Samples)
	}
}

// modernJDK finds a JDK 22 or later (the foreign function API): JAVA_HOME,
// else the newest under /usr/lib/jvm (the machine image's Temurin 25;
// Debian 12 packages only JDK 17). It skips without one, and fails under CI.
func modernJDK(t *testing.T) jdk {
	t.Helper()
	homes := []string{os.Getenv("JAVA_HOME")}
	dirs, _ := filepath.Glob("/usr/lib/jvm/*")
	homes = append(homes, dirs...)
	best, bestVersion := "", 0
	for _, h := range homes {
		if h == "" {
			continue
		}
		release, err := os.ReadFile(filepath.Join(h, "release"))
		if err != nil {
			continue
		}
		m := javaVersion.FindSubmatch(release)
		if m == nil {
			continue
		}
		v, _ := strconv.Atoi(string(m[1]))
		if _, err := os.Stat(filepath.Join(h, "bin", "jcmd")); err == nil && v > bestVersion {
			best, bestVersion = h, v
		}
	}
	if bestVersion < 22 {
		msg := "no JDK 22 or later (JAVA_HOME or /usr/lib/jvm): the case runs virtual threads through the foreign function API"
		if harness.InCI() {
			t.Fatal("CI is set and there is " + msg)
		}
		t.Skip("skipped: " + msg)
	}
	t.Logf("JDK %d at %s", bestVersion, best)
	return jdk{bin: filepath.Join(best, "bin"), opts: []string{"--enable-native-access=ALL-UNNAMED"}}
}

var javaVersion = regexp.MustCompile(`(?m)^JAVA_VERSION="(\d+)`)

// TestJ1PinnedVirtualThreads: virtual threads blocking inside a callback
// from native code, which pins them on every JDK.
// Live only when asked (PERFDOCTOR_CASEBOOK_JVM_CASES=j1).
func TestJ1PinnedVirtualThreads(t *testing.T) {
	live(t, "j1")
	need(t)
	j := modernJDK(t)
	check(t, jvmCase{"j1", "J1: virtual threads blocking in a callback from a native sort", "virtual-thread-pinning", false}, func(t *testing.T, variant string) *service {
		return startOn(t, j, "j1pinned/Catalog.java", "casebook.j1.Catalog", variant)
	})
}

// TestJ2ContendedMonitor: a remote call made while holding the monitor
// every request needs.
// The JFR case CI runs live (smokeCase).
func TestJ2ContendedMonitor(t *testing.T) {
	live(t, "j2")
	need(t)
	check(t, jvmCase{"j2", "J2: a remote audit call inside the synchronized block every request needs", "jvm-lock-contention", false}, func(t *testing.T, variant string) *service {
		return start(t, "j2monitor/Ledger.java", "casebook.j2.Ledger", variant)
	})
}

// TestJ3SmallThreadPool: a pool sized for the CPUs serving requests that
// wait on a backend.
// Live only when asked (PERFDOCTOR_CASEBOOK_JVM_CASES=j3).
func TestJ3SmallThreadPool(t *testing.T) {
	live(t, "j3")
	need(t)
	check(t, jvmCase{"j3", "J3: a pool of two threads sized for the CPUs, each request waiting on a backend", "jvm-thread-pool-size", false}, func(t *testing.T, variant string) *service {
		return start(t, "j3pool/Quotes.java", "casebook.j3.Quotes", variant)
	})
}
