package cpu001

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/perfdoctor/perfdoctor/facts"

	"github.com/google/pprof/profile"

	"github.com/perfdoctor/perfdoctor/bundle"
	"github.com/perfdoctor/perfdoctor/evidence"
	"github.com/perfdoctor/perfdoctor/internal/testprof"
	"github.com/perfdoctor/perfdoctor/rules"
)

var ids, wanted []int

// matchSlow is case B5's O(n*m) slice-in-slice match.
func matchSlow() {
	if ids == nil {
		for i := range 2000 {
			ids = append(ids, i*7)
			wanted = append(wanted, i*13)
		}
	}
	n := 0
	for _, a := range ids {
		for _, b := range wanted {
			if a == b {
				n++
			}
		}
	}
	_ = n
}

func TestNamesTheHotFunction(t *testing.T) {
	cpu := testprof.CPU(t, 2*time.Second, 1, matchSlow)
	res := rules.Run(facts.New(testprof.Evidence(map[evidence.Kind]*profile.Profile{evidence.CPU: cpu})), []*rules.Rule{Rule})
	if len(res.Findings) != 1 {
		t.Fatalf("want a hot-function finding, got %d", len(res.Findings))
	}
	f := res.Findings[0]
	if !strings.Contains(f.Summary, "cpu001.matchSlow") || f.Severity != rules.Low {
		t.Errorf("summary %q severity %s", f.Summary, f.Severity)
	}
	if len(f.Locations) == 0 || f.Locations[0].Line == 0 || !strings.HasSuffix(f.Locations[0].File, "hotfunction_test.go") {
		t.Errorf("no file:line for the hot code: %+v", f.Locations)
	}
}

// The path runs from the program's code through the library it calls to
// where the cost is; the program's frame that makes the call is named as
// where the change goes.
func TestChargesLibraryCallsToTheCaller(t *testing.T) {
	cpu := testprof.Build(
		testprof.Stack{Value: 400, Funcs: []string{"crypto/sha256.block", "crypto/sha256.Sum256", "example.com/svc.hashAll", "main.main"}},
		testprof.Stack{Value: 600, Funcs: []string{"runtime.futex", "runtime.schedule"}},
	)
	res := rules.Run(facts.New(testprof.Evidence(map[evidence.Kind]*profile.Profile{evidence.CPU: cpu})), []*rules.Rule{Rule})
	if len(res.Findings) != 1 {
		t.Fatalf("got %+v", res.Findings)
	}
	f := res.Findings[0]
	if !strings.Contains(f.Summary, "main.main -> svc.hashAll -> sha256.Sum256 -> sha256.block holds 40% of CPU") {
		t.Errorf("summary %q", f.Summary)
	}
	if len(f.Locations) < 2 || f.Locations[1].Function != "example.com/svc.hashAll" || f.Locations[1].Role != "the program's call" ||
		!strings.HasPrefix(f.Fix, "svc.hashAll (synthetic.go:12) calls sha256.Sum256") {
		t.Errorf("the program's call is not where the change goes: %+v\n%s", f.Locations, f.Fix)
	}
}

func TestStaysOutOfWhatOtherRulesExplained(t *testing.T) {
	cpu := testprof.Build(
		testprof.Stack{Value: 400, Funcs: []string{"net.DialUDP", "main.send"}},
		testprof.Stack{Value: 600, Funcs: []string{"runtime.futex"}},
	)
	ev := testprof.Evidence(map[evidence.Kind]*profile.Profile{evidence.CPU: cpu})
	explainer := &rules.Rule{ID: "X1", Class: "connection-churn", Needs: []rules.Input{rules.CPU}, Check: func(p *rules.Pass) error {
		p.Report(rules.Finding{Impact: 0.4, Frames: []string{"net.DialUDP"}})
		return nil
	}}
	res := rules.Run(facts.New(ev), []*rules.Rule{Rule, explainer})
	if len(res.Findings) != 1 || res.Findings[0].Rule != "X1" {
		t.Fatalf("fallback repeated an explained cost: %+v", res.Findings)
	}
}

func TestSilentWhenNothingStandsOut(t *testing.T) {
	var stacks []testprof.Stack
	for i := range 50 {
		stacks = append(stacks, testprof.Stack{Value: 20, Funcs: []string{"example.com/svc.f" + string(rune('a'+i%26)) + string(rune('a'+i/26))}})
	}
	res := rules.Run(facts.New(testprof.Evidence(map[evidence.Kind]*profile.Profile{evidence.CPU: testprof.Build(stacks...)})), []*rules.Rule{Rule})
	if len(res.Findings) != 0 {
		t.Fatalf("flat profile reported: %+v", res.Findings[0])
	}
}

// TestNativeSystemCallsChargedToTheCaller: in perf stacks of a native
// service, kernel and shared-library frames (write, memcpy in libc) are
// calls the program's own function made: its subtree holds them.
func TestNativeSystemCallsChargedToTheCaller(t *testing.T) {
	kernel := &profile.Mapping{ID: 1, File: "[kernel.kallsyms]"}
	libc := &profile.Mapping{ID: 2, File: "/usr/lib/x86_64-linux-gnu/libc.so.6"}
	exe := &profile.Mapping{ID: 3, File: "/srv/pages"}
	p := &profile.Profile{SampleType: []*profile.ValueType{{Type: "samples", Unit: "count"}, {Type: "cpu", Unit: "nanoseconds"}},
		Mapping: []*profile.Mapping{kernel, libc, exe}}
	loc := func(fn string, m *profile.Mapping) *profile.Location {
		f := &profile.Function{ID: uint64(len(p.Function) + 1), Name: fn}
		p.Function = append(p.Function, f)
		l := &profile.Location{ID: uint64(len(p.Location) + 1), Mapping: m, Line: []profile.Line{{Function: f}}}
		p.Location = append(p.Location, l)
		return l
	}
	tcpSend, write, serve, render, main := loc("tcp_sendmsg", kernel), loc("__libc_write", libc), loc("serve", exe), loc("render", exe), loc("main", exe)
	p.Sample = []*profile.Sample{
		{Location: []*profile.Location{tcpSend, write, serve, main}, Value: []int64{700, 7e9}},
		{Location: []*profile.Location{render, serve, main}, Value: []int64{300, 3e9}},
	}
	res := rules.Run(facts.New(testprof.Evidence(map[evidence.Kind]*profile.Profile{evidence.CPU: p})), []*rules.Rule{Rule})
	if len(res.Findings) != 1 || !strings.HasPrefix(res.Findings[0].Summary, "The dominant path main -> serve holds 100% of CPU; serve spreads it over __libc_write 70%, render 30%") {
		t.Fatalf("want serve's subtree with its system calls, got %+v", res.Findings)
	}
}

// encoded is a CPU profile to decode: parsing it runs in a dependency,
// github.com/google/pprof, whose files are in the module cache.
var encoded = func() []byte {
	var stacks []testprof.Stack
	for i := range 300 {
		stacks = append(stacks, testprof.Stack{Value: int64(i + 1), Funcs: []string{fmt.Sprintf("main.f%d", i), "main.main"}})
	}
	var b bytes.Buffer
	testprof.Build(stacks...).Write(&b)
	return b.Bytes()
}()

func decodeProfiles() {
	if _, err := profile.ParseData(encoded); err != nil {
		panic(err)
	}
}

func TestDependencyCostIsTheCallersChange(t *testing.T) {
	cpu := testprof.CPU(t, 2*time.Second, 1, decodeProfiles)
	res := rules.Run(facts.New(testprof.Evidence(map[evidence.Kind]*profile.Profile{evidence.CPU: cpu})), []*rules.Rule{Rule})
	if len(res.Findings) != 1 {
		t.Fatalf("want a hot-function finding, got %d", len(res.Findings))
	}
	f := res.Findings[0]
	if !strings.HasPrefix(f.Frames[0], "github.com/google/pprof/") {
		t.Fatalf("hottest function %s, want one in github.com/google/pprof", f.Frames[0])
	}
	// The cost is in a dependency, but the call is the program's: the fix
	// names the calling frame and leaves the library's code to its
	// maintainers.
	if !strings.HasPrefix(f.Fix, "cpu001.decodeProfiles (hotfunction_test.go:") || !strings.Contains(f.Fix, "calls profile.ParseData") ||
		!strings.Contains(f.Fix, "maintainers") || strings.Contains(f.Fix, Rule.Doc.Fix) {
		t.Errorf("fix %q", f.Fix)
	}
	// The service's own hot function keeps the code advice.
	own := rules.Run(facts.New(testprof.Evidence(map[evidence.Kind]*profile.Profile{evidence.CPU: testprof.CPU(t, time.Second, 1, matchSlow)})), []*rules.Rule{Rule})
	if len(own.Findings) == 1 && own.Findings[0].Fix != Rule.Doc.Fix {
		t.Errorf("own code: fix %q", own.Findings[0].Fix)
	}
}

// The build information changes the advice: PGO is suggested only for a
// known build without it.
func TestSuggestsPGOWhenTheBuildHasNone(t *testing.T) {
	cpu := testprof.Build(testprof.Stack{Value: 400, Funcs: []string{"example.com/svc.hashAll", "main.main"}})
	for _, tc := range []struct {
		build *bundle.BuildInfo
		want  bool
	}{
		{nil, false},
		{&bundle.BuildInfo{GoVersion: "go1.27.0", Source: "executable"}, true},
		{&bundle.BuildInfo{GoVersion: "go1.27.0", PGO: "/src/default.pgo", Source: "executable"}, false},
	} {
		ev := testprof.Evidence(map[evidence.Kind]*profile.Profile{evidence.CPU: cpu})
		ev.SystemEnd = &bundle.SystemSnapshot{Process: &bundle.ProcessInfo{Build: tc.build}}
		res := rules.Run(facts.New(ev), []*rules.Rule{Rule})
		if len(res.Findings) != 1 {
			t.Fatalf("got %+v", res.Findings)
		}
		if got := strings.Contains(res.Findings[0].Fix, "default.pgo"); got != tc.want {
			t.Errorf("build %+v: PGO advice %v, want %v", tc.build, got, tc.want)
		}
	}
}

// perf names frames it cannot symbolize "[unknown]" (with the file when it
// knows it): they are never named, their time is the named frames' above
// them, and the report says how much was unnamed.
func TestNeverNamesUnsymbolizedFrames(t *testing.T) {
	cpu := testprof.Build(
		testprof.Stack{Value: 500, Funcs: []string{"[unknown]", "[unknown]"}},
		testprof.Stack{Value: 300, Funcs: []string{"[unknown]", "render_page", "main"}},
		testprof.Stack{Value: 200, Funcs: []string{"other_work", "main"}},
	)
	res := rules.Run(facts.New(testprof.Evidence(map[evidence.Kind]*profile.Profile{evidence.CPU: cpu})), []*rules.Rule{Rule})
	if len(res.Findings) != 1 {
		t.Fatalf("want one finding, got %+v", res)
	}
	f := res.Findings[0]
	for _, fn := range f.Frames {
		if strings.Contains(fn, "unknown") {
			t.Errorf("unsymbolized frame named as the hot function: %q", f.Summary)
		}
	}
	// main's subtree holds the 500 samples that have a name, render_page
	// 300 of them: 60%.
	if f.Summary != "main holds 100% of CPU; main spreads it over render_page 60%, other_work 40%" {
		t.Errorf("want main's subtree over the known CPU, got %q", f.Summary)
	}
	var noted bool
	for _, e := range f.Evidence {
		noted = noted || e.Name == "CPU in unsymbolized frames, left out of the shares" && e.Value == "50%"
	}
	if !noted || len(res.NotChecked) != 1 || !strings.Contains(res.NotChecked[0].Reason, "dbgsym") {
		t.Errorf("the unsymbolized half is not reported with how to fix it: %+v %+v", f.Evidence, res.NotChecked)
	}

	// All of it unsymbolized: no finding, and the reason says why.
	all := testprof.Build(testprof.Stack{Value: 1000, Funcs: []string{"[unknown]", "[unknown]"}})
	res = rules.Run(facts.New(testprof.Evidence(map[evidence.Kind]*profile.Profile{evidence.CPU: all})), []*rules.Rule{Rule})
	if len(res.Findings) != 0 || len(res.NotChecked) != 1 || !strings.Contains(res.NotChecked[0].Reason, "100% of CPU samples end in unsymbolized frames") {
		t.Errorf("all-unknown profile: %+v", res)
	}
}

// A stripped program spending its time in libcrypto: no function of its own
// is named, so the library is, with TLS's prescription. When a named
// function outweighs it, the function is reported as before.
func TestNamesANativeLibraryWhenItsCallersAreUnknown(t *testing.T) {
	run := func(lib, fn int64) rules.Result {
		cpu := testprof.Build(
			testprof.Stack{Value: lib, Funcs: []string{"[unknown] libcrypto.so.3", "[unknown] libssl.so.3", "[unknown]"}},
			testprof.Stack{Value: fn, Funcs: []string{"serve_static", "main"}},
		)
		return rules.Run(facts.New(testprof.Evidence(map[evidence.Kind]*profile.Profile{evidence.CPU: cpu})), []*rules.Rule{Rule})
	}
	res := run(600, 400)
	if len(res.Findings) != 1 {
		t.Fatalf("want one finding: %+v", res)
	}
	f := res.Findings[0]
	if !strings.HasPrefix(f.Summary, "OpenSSL/BoringSSL (TLS and crypto) uses 60% of CPU") || !strings.Contains(f.Fix, "session") ||
		!strings.Contains(f.Fix, "dbgsym") {
		t.Errorf("%q\n%s", f.Summary, f.Fix)
	}
	if res := run(300, 700); len(res.Findings) != 1 || res.Findings[0].Frames[0] != "serve_static" {
		t.Errorf("a named function that outweighs the library: %+v", res.Findings)
	}
}
