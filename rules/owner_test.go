package rules_test

import (
	"bytes"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/pprof/profile"

	"github.com/perfdoctor/perfdoctor/bundle"
	"github.com/perfdoctor/perfdoctor/evidence"
	"github.com/perfdoctor/perfdoctor/facts"
	"github.com/perfdoctor/perfdoctor/internal/testprof"
	"github.com/perfdoctor/perfdoctor/rules"
)

// parseOwn is this module's code calling a dependency (github.com/google/pprof).
var parsed = func() []byte {
	p := testprof.Build(testprof.Stack{Value: 1, Funcs: []string{"main.f"}})
	var b bytes.Buffer
	p.Write(&b)
	return b.Bytes()
}()

func parseOwn() {
	if _, err := profile.ParseData(parsed); err != nil {
		panic(err)
	}
}

// A real profile of this test binary: a module-mode build, so the
// dependency's files are in the module cache and this package's are not.
func TestOwnersFromModuleCachePaths(t *testing.T) {
	cpu := testprof.CPU(t, 500*time.Millisecond, 1, parseOwn)
	o := readOwners(testprof.Evidence(map[evidence.Kind]*profile.Profile{evidence.CPU: cpu}))
	st := evidence.NewStacks(cpu, "")
	seen := map[facts.Owner]bool{}
	for _, f := range st.Frames {
		w := o.Of(f)
		switch {
		case strings.HasPrefix(f.Func, "github.com/google/pprof/"):
			if w.Owner != facts.OwnerDependency || w.Module != "github.com/google/pprof" {
				t.Errorf("%s (%s): %+v, want the dependency github.com/google/pprof", f.Func, f.File, w)
			}
		case strings.HasPrefix(f.Func, "github.com/perfdoctor/perfdoctor/rules_test.parseOwn"):
			if w.Owner != facts.OwnerMain {
				t.Errorf("%s (%s): %+v, want the main module", f.Func, f.File, w)
			}
		case strings.HasPrefix(f.Func, "runtime."):
			if w.Owner != facts.OwnerStdlib {
				t.Errorf("%s: %+v", f.Func, w)
			}
		}
		seen[w.Owner] = true
	}
	if !seen[facts.OwnerMain] || !seen[facts.OwnerDependency] {
		t.Fatalf("the profile shows no main-module and dependency frames: %v", seen)
	}
}

func frame(fn, file string) evidence.Frame { return evidence.Frame{Func: fn, File: file} }

func TestOwnersFromBuildInfo(t *testing.T) {
	withProc := func(p *bundle.ProcessInfo) *evidence.Evidence {
		ev := testprof.Evidence(nil)
		ev.SystemEnd = &bundle.SystemSnapshot{Time: time.Now(), Process: p}
		return ev
	}
	caddyhttp := frame("github.com/caddyserver/caddy/v2/modules/caddyhttp.(*Server).ServeHTTP", "/build/caddy/modules/caddyhttp/server.go")
	zap := frame("go.uber.org/zap/zapcore.(*ioCore).Write", "/build/_build/src/go.uber.org/zap/zapcore/core.go")

	own := readOwners(withProc(&bundle.ProcessInfo{Build: &bundle.BuildInfo{Main: "github.com/caddyserver/caddy/v2", MainVersion: "(devel)"}, Executable: "/home/me/caddy/caddy"}))
	if w := own.Of(caddyhttp); w.Owner != facts.OwnerMain {
		t.Errorf("caddyhttp in a checkout build: %+v", w)
	}
	if w := own.Of(zap); w.Owner != facts.OwnerDependency || w.Module != "go.uber.org/zap" {
		t.Errorf("zap: %+v", w)
	}
	if fix, _, editable := rules.Advise(own, caddyhttp, "edit", "configure"); fix != "edit" || !editable {
		t.Errorf("own code: %q", fix)
	}
	if fix, fact, editable := rules.Advise(own, zap, "edit", "configure"); editable || !strings.HasSuffix(fix, "configure") || !strings.Contains(fix, "go.uber.org/zap, a dependency") || !strings.Contains(fact.Value, "dependency") {
		t.Errorf("dependency: %q %+v", fix, fact)
	}

	// The same program installed from the distribution: nothing in it is the user's to edit.
	packaged := readOwners(withProc(&bundle.ProcessInfo{Build: &bundle.BuildInfo{Main: "github.com/caddyserver/caddy/v2"}, Executable: "/usr/bin/caddy"}))
	if fix, _, editable := rules.Advise(packaged, caddyhttp, "edit", "configure"); editable || !strings.HasSuffix(fix, "configure") || !strings.Contains(fix, "/usr/bin/caddy") {
		t.Errorf("packaged program: %q", fix)
	}
	// Without build info, a packaged program's code is still not the user's.
	noInfo := readOwners(withProc(&bundle.ProcessInfo{Executable: "/usr/bin/caddy"}))
	if fix, _, _ := rules.Advise(noInfo, caddyhttp, "edit", "configure"); !strings.HasSuffix(fix, "configure") {
		t.Errorf("packaged program without build info: %q", fix)
	}
	// A fresh clone's build is stamped with a pseudo-version: still the user's checkout.
	clone := readOwners(withProc(&bundle.ProcessInfo{Build: &bundle.BuildInfo{Main: "github.com/caddyserver/caddy/v2", MainVersion: "v2.6.3-0.20261127192951-0457aa982ddb", VCS: "git"}, Executable: "/home/me/caddy/caddy"}))
	if fix, _, editable := rules.Advise(clone, caddyhttp, "edit", "configure"); fix != "edit" || !editable {
		t.Errorf("a clone's untagged commit: %q", fix)
	}
	released := readOwners(withProc(&bundle.ProcessInfo{Build: &bundle.BuildInfo{Main: "github.com/caddyserver/caddy/v2", MainVersion: "v2.6.2"}, Executable: "/opt/caddy"}))
	if fix, _, _ := rules.Advise(released, caddyhttp, "edit", "configure"); !strings.HasSuffix(fix, "configure") {
		t.Errorf("released build: %q", fix)
	}
}

func TestOwnersWithoutBuildInfo(t *testing.T) {
	build := func(files map[string]string) *evidence.Evidence {
		p := &profile.Profile{SampleType: []*profile.ValueType{{Type: "samples", Unit: "count"}}}
		for fn, file := range files {
			p.Function = append(p.Function, &profile.Function{ID: uint64(len(p.Function) + 1), Name: fn, Filename: file})
		}
		return testprof.Evidence(map[evidence.Kind]*profile.Profile{evidence.CPU: p})
	}
	// -trimpath: the main package's file names its import path.
	trim := readOwners(build(map[string]string{"main.main": "github.com/caddyserver/caddy/v2/cmd/caddy/main.go"}))
	if trim.Main != "github.com/caddyserver/caddy/v2" {
		t.Errorf("main module from a -trimpath main.go: %q", trim.Main)
	}
	for _, tc := range []struct {
		owners *facts.CodeOwners
		f      evidence.Frame
		want   facts.Owner
		module string
	}{
		{trim, frame("github.com/caddyserver/caddy/v2/modules/caddyhttp.(*Server).ServeHTTP", "github.com/caddyserver/caddy/v2/modules/caddyhttp/server.go"), facts.OwnerMain, ""},
		{trim, frame("github.com/caddyserver/certmagic.(*Config).renew", "github.com/caddyserver/certmagic@v0.21.3/config.go"), facts.OwnerDependency, "github.com/caddyserver/certmagic"},
		{trim, frame("compress/flate.(*compressor).deflate", "compress/flate/deflate.go"), facts.OwnerStdlib, ""},
		// the module cache escapes capitals
		{trim, frame("github.com/Azure/go-ansiterm.Parse", "/root/go/pkg/mod/github.com/!azure/go-ansiterm@v0.0.0-2021/parser.go"), facts.OwnerDependency, "github.com/Azure/go-ansiterm"},
		// GOPATH-era vendoring
		{trim, frame("github.com/acme/svc/vendor/github.com/sirupsen/logrus.(*Entry).log", "/src/github.com/acme/svc/vendor/github.com/sirupsen/logrus/entry.go"), facts.OwnerDependency, "github.com/sirupsen/logrus"},
		// nothing tells: unknown, and the prescription stays a code edit
		{readOwners(build(nil)), frame("github.com/acme/svc/api.Handle", "/src/api/handle.go"), facts.OwnerUnknown, ""},
	} {
		w := tc.owners.Of(tc.f)
		if w.Owner != tc.want || w.Module != tc.module {
			t.Errorf("%s (%s): %+v, want owner %d module %q", tc.f.Func, tc.f.File, w, tc.want, tc.module)
		}
	}
	if fix, _, _ := rules.Advise(readOwners(build(nil)), frame("github.com/acme/svc/api.Handle", ""), "edit", "configure"); fix != "edit" {
		t.Errorf("unknown ownership must keep the code fix: %q", fix)
	}
}

// A CPU profile of Debian's prometheus (go1.19, -trimpath, GOPATH mode: no
// module in the build info, no @version in file paths), recorded on
// loopback while it served range queries.
func TestOwnersOfADistributionBuild(t *testing.T) {
	f, err := os.Open("testdata/prometheus-debian-cpu.pb.gz")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cpu, err := profile.Parse(f)
	if err != nil {
		t.Fatal(err)
	}
	ev := testprof.Evidence(map[evidence.Kind]*profile.Profile{evidence.CPU: cpu})
	// As collect/system reads /usr/bin/prometheus's build info.
	ev.SystemEnd = &bundle.SystemSnapshot{Time: time.Now(), Process: &bundle.ProcessInfo{Build: &bundle.BuildInfo{MainPackage: "github.com/prometheus/prometheus/cmd/prometheus"}, Executable: "/usr/bin/prometheus"}}
	o := readOwners(ev)
	if o.Main != "github.com/prometheus/prometheus" || !strings.Contains(o.Program, "/usr/bin/prometheus") {
		t.Fatalf("main %q program %q", o.Main, o.Program)
	}
	want := map[string]facts.Ownership{
		"github.com/prometheus/client_golang/prometheus/promhttp.HandlerForTransactional.func1": {Owner: facts.OwnerDependency, Module: "github.com/prometheus/client_golang"},
		"github.com/julienschmidt/httprouter.(*Router).ServeHTTP":                               {Owner: facts.OwnerDependency, Module: "github.com/julienschmidt/httprouter"},
		"github.com/prometheus/prometheus/web.setPathWithPrefix.func1.1":                        {Owner: facts.OwnerMain},
		"compress/flate.(*compressor).deflate":                                                  {Owner: facts.OwnerStdlib},
	}
	seen := map[string]bool{}
	for _, fr := range evidence.NewStacks(cpu, "").Frames {
		w, ok := want[fr.Func]
		if !ok {
			continue
		}
		seen[fr.Func] = true
		if got := o.Of(fr); got.Owner != w.Owner || got.Module != w.Module {
			t.Errorf("%s (%s): %+v, want %+v", fr.Func, fr.File, got, w)
		}
	}
	if len(seen) < len(want) {
		t.Fatalf("the fixture holds %d of the %d frames checked", len(seen), len(want))
	}
	// Its own web handler is code shipped with a packaged program: configuration, not an edit.
	web := evidence.Frame{Func: "github.com/prometheus/prometheus/web.setPathWithPrefix.func1.1"}
	if fix, _, _ := rules.Advise(o, web, "edit", "configure"); !strings.HasSuffix(fix, "configure") {
		t.Errorf("packaged prometheus: %q", fix)
	}
}

// A finding whose rule did not ask whose code it names is qualified by the
// engine when its first location is in a packaged program: the code change
// is its maintainers', and the caveat says what is the user's. A location
// in the user's own build is left alone.
func TestForeignCodeIsQualified(t *testing.T) {
	allocRule := func(fn string) *rules.Rule {
		return &rules.Rule{ID: "T001", Class: "gc-pressure", Check: func(p *rules.Pass) error {
			p.Report(rules.Finding{Severity: rules.Low, Impact: 0.1, Resource: "cpu", Summary: "allocations", Fix: "Cut allocations at " + fn,
				Locations: []rules.Location{{Function: fn, File: "/build/prometheus/promql/parser/ast.go", Line: 313}}})
			return nil
		}}
	}
	packaged := testprof.Evidence(nil)
	packaged.SystemEnd = &bundle.SystemSnapshot{Time: time.Now(), Process: &bundle.ProcessInfo{
		Build: &bundle.BuildInfo{Main: "github.com/prometheus/prometheus"}, Executable: "/usr/bin/prometheus"}}
	res := rules.Run(facts.New(packaged), []*rules.Rule{allocRule("github.com/prometheus/prometheus/promql/parser.Walk")})
	f := res.Findings[0]
	if len(f.Caveats) != 1 || !strings.Contains(f.Caveats[0], "for its maintainers") || f.Evidence[len(f.Evidence)-1].Name != "whose code" {
		t.Errorf("packaged program: caveats %q evidence %+v", f.Caveats, f.Evidence)
	}
	own := testprof.Evidence(nil)
	own.SystemEnd = &bundle.SystemSnapshot{Time: time.Now(), Process: &bundle.ProcessInfo{
		Build: &bundle.BuildInfo{Main: "github.com/prometheus/prometheus", MainVersion: "(devel)"}, Executable: "/home/me/prometheus/prometheus"}}
	if f := rules.Run(facts.New(own), []*rules.Rule{allocRule("github.com/prometheus/prometheus/promql/parser.Walk")}).Findings[0]; len(f.Caveats) != 0 {
		t.Errorf("the user's own build: caveats %q", f.Caveats)
	}
}

func readOwners(ev *evidence.Evidence) *facts.CodeOwners { return facts.Read(ev, facts.Owners) }
