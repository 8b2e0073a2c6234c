// Package javacases runs the casebook's JVM cases end to end: each service
// is a Java program compiled with javac by the test, loaded on loopback,
// recorded with `perfdoctor collect --jfr` and diagnosed with the perfdoctor
// binary, as a user would.
package javacases

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/perfdoctor/perfdoctor/casebook/internal/harness"
	"github.com/perfdoctor/perfdoctor/evidence"
	"github.com/perfdoctor/perfdoctor/load"
	"github.com/perfdoctor/perfdoctor/rules"
)

var perfdoctor string

func TestMain(m *testing.M) {
	harness.Main(m, "java", map[string]*string{harness.Perfdoctor: &perfdoctor})
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

// start compiles src with javac into a temporary directory and runs
// mainClass with the variant, waiting for its "app=URL" line.
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
	classes := t.TempDir()
	args := []string{"-d", classes}
	if len(classpath) > 0 {
		args = append(args, "-cp", strings.Join(classpath, ":"))
	}
	if out, err := exec.Command(j.tool("javac"), append(args, src)...).CombinedOutput(); err != nil {
		t.Fatalf("javac %s: %v\n%s", src, err, out)
	}
	// nodelay: the JDK's HTTP server otherwise waits on delayed ACKs between
	// headers and body, and every variant would measure 40 ms round trips.
	cmd := exec.Command(j.tool("java"), append(append([]string{"-Xmx256m", "-Dsun.net.httpserver.nodelay=true"}, j.opts...),
		"-cp", strings.Join(append([]string{classes}, classpath...), ":"), mainClass, variant)...)
	url := harness.Start(t, cmd, "app=", 30*time.Second)
	return &service{pid: cmd.Process.Pid, url: url}
}

// diagnoseUnderLoad warms the JVM up, then records it with
// `perfdoctor collect --jfr` during a bounded closed-loop load and returns
// the findings of `perfdoctor diagnose` and the throughput measured while
// recording. On a busy machine a window can hold too few CPU samples for
// the rules; it then records again over a window twice as long, at most
// three times, rather than judge thin evidence.
func diagnoseUnderLoad(t *testing.T, s *service) ([]harness.Finding, float64) {
	t.Helper()
	findings, _, rps := diagnoseWith(t, s, "--jfr")
	return findings, rps
}

// diagnoseWith is diagnoseUnderLoad with collect's JVM flag (--jfr or
// --jvm) and its extra arguments; it also returns the bundle.
func diagnoseWith(t *testing.T, s *service, flag string, args ...string) ([]harness.Finding, string, float64) {
	t.Helper()
	const warmup = 3 * time.Second
	if _, err := load.Run(context.Background(), load.Config{URL: s.url, Concurrency: 4, Duration: warmup}); err != nil {
		t.Fatalf("warm-up load: %v", err)
	}
	window := 6 * time.Second
	for attempt := 1; ; attempt++ {
		bundleDir, _, rps := recordUnderLoad(t, s, window, flag, args...)
		ev, err := evidence.Load(bundleDir)
		if err != nil {
			t.Fatalf("load the bundle: %v", err)
		}
		n := evidence.SampleCount(ev.Profile(evidence.CPU))
		if n >= rules.MinCPUSamples || attempt == 3 {
			t.Logf("%d CPU samples over %s (attempt %d)", n, window, attempt)
			return harness.Diagnose(t, perfdoctor, bundleDir).Findings, bundleDir, rps
		}
		t.Logf("only %d CPU samples over %s (a busy machine?): recording again over %s", n, window, 2*window)
		window *= 2
	}
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
		r, err := load.Run(ctx, load.Config{URL: s.url, Concurrency: 4, Duration: window + 20*time.Second})
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

// check runs both variants of a case: the bad one's top finding must be
// the case's class, the fixed one must not show it above low.
func check(t *testing.T, class string, run func(t *testing.T, variant string) *service) {
	var rps [2]float64
	for i, variant := range []string{"bad", "fixed"} {
		t.Run(variant, func(t *testing.T) {
			var findings []harness.Finding
			findings, rps[i] = diagnoseUnderLoad(t, run(t, variant))
			if variant == "bad" {
				if len(findings) == 0 || findings[0].Class != class {
					t.Fatalf("top finding is not %s: %+v", class, findings)
				}
				return
			}
			for _, f := range findings {
				if f.Class == class && f.Severity != "low" && f.Severity != "info" {
					t.Errorf("%s still reported at %s: %s", class, f.Severity, f.Summary)
				}
			}
		})
	}
	t.Logf("throughput while recording: bad %.0f, fixed %.0f requests/s", rps[0], rps[1])
}

// TestE5ExceptionOverhead: exceptions thrown and swallowed per request.
func TestE5ExceptionOverhead(t *testing.T) {
	need(t)
	check(t, "exception-overhead", func(t *testing.T, variant string) *service {
		return start(t, "e5/Login.java", "casebook.e5.Login", variant)
	})
}

// TestE4FrameworkRouting: AntPathMatcher over every route per request.
func TestE4FrameworkRouting(t *testing.T) {
	need(t)
	jar := springCore(t)
	check(t, "framework-routing-cost", func(t *testing.T, variant string) *service {
		return start(t, "e4/Routes.java", "casebook.e4.Routes", variant, jar)
	})
}
