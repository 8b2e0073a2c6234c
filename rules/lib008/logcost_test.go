package lib008

import (
	"context"
	"crypto/sha256"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/perfdoctor/perfdoctor/facts"

	"github.com/google/pprof/profile"

	"github.com/perfdoctor/perfdoctor/bundle"
	"github.com/perfdoctor/perfdoctor/evidence"
	"github.com/perfdoctor/perfdoctor/facts/frames"
	"github.com/perfdoctor/perfdoctor/internal/testprof"
	"github.com/perfdoctor/perfdoctor/rules"
)

var sum [32]byte

// handleBid does a little work and logs every request at Info.
func handleBid(log *slog.Logger) func() {
	buf := make([]byte, 128)
	return func() {
		sum = sha256.Sum256(buf)
		buf[0] = sum[0]
		log.Info("bid", "id", "b-1234", "campaign", "spring-sale", "price", 0.0425, "user", 42)
	}
}

func run(cpu *profile.Profile) rules.Result {
	return rules.Run(facts.New(testprof.Evidence(map[evidence.Kind]*profile.Profile{evidence.CPU: cpu})), []*rules.Rule{Rule})
}

func TestFiresOnSlogPerRequest(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	res := run(testprof.CPU(t, 2*time.Second, 1, handleBid(log)))
	if len(res.Findings) != 1 {
		t.Fatalf("want a logging-cost finding, got %d (%v)", len(res.Findings), res.NotChecked)
	}
	f := res.Findings[0]
	if f.Impact < 0.2 || !strings.Contains(f.Summary, "log/slog") || !strings.Contains(f.Summary, "handleBid") {
		t.Errorf("impact %.2f summary %q", f.Impact, f.Summary)
	}
	if !strings.Contains(f.Fix, "LevelVar") || len(f.Locations) == 0 || !strings.Contains(f.Locations[0].Function, "handleBid") {
		t.Errorf("fix %q locations %+v", f.Fix, f.Locations)
	}
}

func TestSilentWhenTheLevelDropsTheRecords(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelWarn}))
	if !log.Enabled(context.Background(), slog.LevelWarn) || log.Enabled(context.Background(), slog.LevelInfo) {
		t.Fatal("level not applied")
	}
	if res := run(testprof.CPU(t, 2*time.Second, 1, handleBid(log))); len(res.Findings) != 0 {
		t.Fatalf("disabled level reported: %+v", res.Findings[0])
	}
}

func stack(v int64, funcs ...string) testprof.Stack { return testprof.Stack{Value: v, Funcs: funcs} }

// Symbol names as in github.com/sirupsen/logrus v1.9 (entry.go,
// text_formatter.go), go.uber.org/zap v1.27 (sugar.go, logger.go,
// zapcore/core.go, zapcore/json_encoder.go), github.com/rs/zerolog v1.3x (event.go).
const (
	lr = "github.com/sirupsen/logrus."
	zp = "go.uber.org/zap."
	zc = "go.uber.org/zap/zapcore."
)

func TestLogrusThroughAWrapperPackage(t *testing.T) {
	cpu := testprof.Build(
		stack(120, "sort.Strings", lr+"(*TextFormatter).Format", lr+"(*Entry).write", lr+"(*Entry).log", lr+"(*Entry).Log", lr+"(*Entry).Logf", lr+"(*Entry).Infof",
			"github.com/acme/adx/internal/logging.Infof", "github.com/acme/adx/bidder.(*Bidder).Bid", "main.handle"),
		stack(80, "fmt.(*pp).doPrintf", "fmt.Sprintf", lr+"(*Entry).Logf", lr+"(*Entry).Infof",
			"github.com/acme/adx/internal/logging.Infof", "github.com/acme/adx/bidder.(*Bidder).Bid", "main.handle"),
		stack(60, "syscall.write", "internal/poll.(*FD).Write", "os.(*File).Write", lr+"(*Entry).write", lr+"(*Entry).log", lr+"(*Entry).Log", lr+"(*Entry).Logf", lr+"(*Entry).Infof",
			"github.com/acme/adx/internal/logging.Infof", "github.com/acme/adx/bidder.(*Bidder).Bid", "main.handle"),
		stack(740, "main.handle"),
	)
	res := run(cpu)
	if len(res.Findings) != 1 {
		t.Fatalf("logrus not reported: %+v", res)
	}
	f := res.Findings[0]
	if f.Severity != rules.High || !strings.Contains(f.Fix, "SetLevel(logrus.WarnLevel)") {
		t.Errorf("severity %s fix %q", f.Severity, f.Fix)
	}
	if f.Locations[0].Function != "github.com/acme/adx/bidder.(*Bidder).Bid" {
		t.Errorf("call site %+v, want the code above the logging wrapper", f.Locations[0])
	}
}

func TestZapSugaredLoggerAdvice(t *testing.T) {
	cpu := testprof.Build(
		stack(100, "fmt.(*pp).doPrintf", "fmt.Sprintf", zp+"getMessage", zp+"(*SugaredLogger).log", zp+"(*SugaredLogger).Infof", "main.(*api).serve"),
		stack(60, zc+"(*jsonEncoder).EncodeEntry", zc+"(*ioCore).Write", zc+"(*CheckedEntry).Write", zp+"(*SugaredLogger).log", zp+"(*SugaredLogger).Infof", "main.(*api).serve"),
		stack(840, "main.(*api).serve"),
	)
	res := run(cpu)
	if len(res.Findings) != 1 {
		t.Fatalf("zap sugar not reported: %+v", res)
	}
	f := res.Findings[0]
	if !strings.Contains(f.Summary, "SugaredLogger") || !strings.Contains(f.Fix, "typed fields") || f.Example == "" {
		t.Errorf("summary %q fix %q example %q", f.Summary, f.Fix, f.Example)
	}
}

func TestSilentOnCheapLoggingAndDisabledLevels(t *testing.T) {
	cpu := testprof.Build(
		// zerolog at 3%.
		stack(30, "github.com/rs/zerolog.(*Event).msg", "github.com/rs/zerolog.(*Event).Msg", "main.handle"),
		// zap with Debug disabled: only the level check.
		stack(10, zp+"(*Logger).check", zp+"(*Logger).Debug", "main.handle"),
		stack(960, "main.handle"),
	)
	if res := run(cpu); len(res.Findings) != 0 {
		t.Fatalf("cheap logging reported: %+v", res.Findings[0])
	}
}

func TestStdlibLogWritesAreCounted(t *testing.T) {
	cpu := testprof.Build(
		stack(60, "syscall.write", "internal/poll.(*FD).Write", "os.(*File).Write", "log.(*Logger).output", "log.Printf", "main.handle"),
		stack(20, "log.formatHeader", "log.(*Logger).output", "log.Printf", "main.handle"),
		stack(920, "main.handle"),
	)
	f := run(cpu).Findings
	if len(f) != 1 || !strings.Contains(f[0].Fix, "one system call per record") {
		t.Fatalf("log.Printf writes: %+v", f)
	}
}

func TestWrapperNames(t *testing.T) {
	for fn, want := range map[string]bool{
		"github.com/acme/adx/internal/logging.Infof":              true,
		"github.com/acme/x/log.Debugf":                            true,
		"github.com/acme/x/logger.New":                            true,
		"github.com/acme/catalog.(*Store).Get":                    false,
		"github.com/acme/login.Handle":                            false,
		"main.logf":                                               false,
		"github.com/acme/casebook/d3logging.handle":               false,
		"github.com/coredns/coredns/plugin/pkg/log.Info":          true,
		"github.com/coredns/coredns/plugin/log.Logger.ServeDNS":   false, // a logging middleware: the code that logs
		"github.com/acme/x/logging.(*middleware).ServeHTTP":       false,
		"github.com/acme/x/logging.(*middleware).ServeHTTP.func1": false,
	} {
		if wrapper(fn) != want {
			t.Errorf("wrapper(%q) = %v", fn, !want)
		}
	}
}

// caddy logs its access log with zap's typed Logger: the advice is its
// configuration, never "use zap with typed fields".
func TestThirdPartyProgramGetsConfiguration(t *testing.T) {
	access := "github.com/caddyserver/caddy/v2/modules/caddyhttp.(*Server).logRequest"
	cpu := testprof.Build(
		stack(150, zc+"(*jsonEncoder).EncodeEntry", zc+"(*ioCore).Write", zc+"(*CheckedEntry).Write", zp+"(*Logger).Info", access, "github.com/caddyserver/caddy/v2/modules/caddyhttp.(*Server).ServeHTTP"),
		stack(850, "github.com/caddyserver/caddy/v2/modules/caddyhttp.(*Server).ServeHTTP"),
	)
	for _, tc := range []struct {
		exe, version string
		config       bool
	}{
		{"/usr/bin/caddy", "", true},                          // the distribution's package
		{"/home/dev/caddy/cmd/caddy/caddy", "(devel)", false}, // a caddy developer's own build
	} {
		ev := testprof.Evidence(map[evidence.Kind]*profile.Profile{evidence.CPU: cpu})
		ev.SystemEnd = &bundle.SystemSnapshot{Time: time.Now(), Process: &bundle.ProcessInfo{Build: &bundle.BuildInfo{Main: "github.com/caddyserver/caddy/v2", MainVersion: tc.version}, Executable: tc.exe}}
		res := rules.Run(facts.New(ev), []*rules.Rule{Rule})
		if len(res.Findings) != 1 {
			t.Fatalf("%s: %+v", tc.exe, res)
		}
		f := res.Findings[0]
		if strings.Contains(f.Fix, "Use the zap.Logger with typed fields") {
			t.Errorf("%s: typed fields advised to a logger already on them: %q", tc.exe, f.Fix)
		}
		if got := strings.Contains(f.Fix, "Configure its logging"); got != tc.config {
			t.Errorf("%s: configuration advice %v, want %v: %q", tc.exe, got, tc.config, f.Fix)
		}
		if tc.config && f.Example != "" {
			t.Errorf("%s: a code example for code the user cannot edit: %q", tc.exe, f.Example)
		}
	}
}

// Every logging library the rules recognise has LIB008's advice.
func TestEveryLoggerHasAFix(t *testing.T) {
	for _, l := range frames.LoggerLibraries {
		if fixes[l.Name] == "" {
			t.Errorf("no fix for %s", l.Name)
		}
	}
	if len(fixes) != len(frames.LoggerLibraries) {
		t.Errorf("%d fixes for %d logging libraries", len(fixes), len(frames.LoggerLibraries))
	}
}

// A logging middleware (CoreDNS's log plugin): its own work outside the
// logger (the line's formatting, the response recorder) is the logging's,
// the next handler's work under it is not.
func TestLoggingMiddlewareOwnWork(t *testing.T) {
	const (
		mw   = "github.com/coredns/coredns/plugin/log.Logger.ServeDNS"
		next = "github.com/coredns/coredns/plugin.NextOrFailure"
		file = "github.com/coredns/coredns/plugin/file.File.ServeDNS"
		srv  = "github.com/coredns/coredns/core/dnsserver.(*Server).ServeDNS"
	)
	res := run(testprof.Build(
		stack(80, "syscall.write", "os.(*File).Write", "log.(*Logger).output", "log.Print", "github.com/coredns/coredns/plugin/pkg/log.Info", mw, srv),
		stack(60, "strings.(*Builder).WriteString", "github.com/coredns/coredns/plugin/pkg/replacer.Replace", mw, srv),
		stack(400, "github.com/coredns/coredns/plugin/file.(*Zone).Lookup", file, next, mw, srv),
		stack(460, "github.com/miekg/dns.(*Msg).Pack", srv),
	))
	if len(res.Findings) != 1 {
		t.Fatalf("want a finding, got %+v", res)
	}
	f := res.Findings[0]
	// 80 under the logger and 60 of the plugin's own: 14%; the zone
	// lookup under the next handler stays out.
	if f.Evidence[0].Num < 0.139 || f.Evidence[0].Num > 0.141 || f.Locations[0].Function != mw {
		t.Errorf("logging share %.3f, locations %+v: want 0.14 from the log plugin", f.Evidence[0].Num, f.Locations)
	}
	// A handler chain with no logging middleware counts the logger alone.
	res = run(testprof.Build(
		stack(80, "syscall.write", "os.(*File).Write", "log.(*Logger).output", "log.Print", "github.com/acme/api.(*Server).ServeHTTP"),
		stack(60, "strings.(*Builder).WriteString", "github.com/acme/api/render.Page", "github.com/acme/api.(*Server).ServeHTTP"),
		stack(860, "github.com/acme/api.(*Server).ServeHTTP"),
	))
	if len(res.Findings) != 1 || res.Findings[0].Evidence[0].Num > 0.081 {
		t.Errorf("no middleware: %+v", res.Findings)
	}
}
