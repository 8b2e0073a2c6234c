package main

import (
	"encoding/json"
	"math"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/pprof/profile"

	"github.com/perfdoctor/perfdoctor/fleet"
	"github.com/perfdoctor/perfdoctor/internal/fleettest"
	"github.com/perfdoctor/perfdoctor/internal/otlptest"
	"github.com/perfdoctor/perfdoctor/internal/pyroscopetest"
	"github.com/perfdoctor/perfdoctor/internal/testprof"
	"github.com/perfdoctor/perfdoctor/report"
	"github.com/perfdoctor/perfdoctor/rules"
)

// TestFleetFromPyroscope: four processes profile themselves with
// Pyroscope's own Go client (pyroscope-go) and push to a Pyroscope
// stand-in (internal/pyroscopetest: written from Pyroscope's documented
// API, not a real server, which cannot be built here); checkout's two
// instances allocate short-lived garbage, catalog's compute a little and
// sleep. fleet --pyroscope must rank checkout first, record the run in
// history, and diagnose and diff must read the same store.
func TestFleetFromPyroscope(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs four profiled processes")
	}
	srv := &pyroscopetest.Server{}
	hs := httptest.NewServer(srv.Handler())
	defer hs.Close()
	bin := filepath.Join(t.TempDir(), "pushsvc")
	if out, err := exec.Command("go", "build", "-o", bin, "../../internal/pyroscopetest/pushsvc").CombinedOutput(); err != nil {
		t.Fatalf("building pushsvc: %v\n%s", err, out)
	}
	var wg sync.WaitGroup
	for _, svc := range []struct{ service, instance, work string }{
		{"checkout", "checkout-1", "alloc"}, {"checkout", "checkout-2", "alloc"},
		{"catalog", "catalog-1", "light"}, {"catalog", "catalog-2", "light"},
	} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out, err := exec.Command(bin, "-server", hs.URL, "-service", svc.service, "-instance", svc.instance,
				"-work", svc.work, "-for", "5s").CombinedOutput()
			if err != nil {
				t.Errorf("pushsvc %s: %v\n%s", svc.instance, err, out)
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	t.Logf("the stand-in took %d uploads", srv.Ingested)

	db := filepath.Join(t.TempDir(), "history.db")
	out := filepath.Join(t.TempDir(), "fleet")
	code, stdout, stderr := perfdoctor(t, "fleet", "--pyroscope", hs.URL, "--from", "1m", "-o", out, "-f", "json", "--record", "--db", db, "--keep-instances")
	if code != 0 {
		t.Fatalf("fleet --pyroscope: exit %d\n%s", code, stderr)
	}
	fleettest.ValidateFleetJSON(t, fleettest.FleetSchema(t, "../../docs"), []byte(stdout))
	var rep fleet.Report
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatalf("fleet JSON: %v", err)
	}
	if len(rep.Services) != 2 || len(rep.Savings) == 0 {
		t.Fatalf("want 2 services and savings, got %d services, %d savings\n%s", len(rep.Services), len(rep.Savings), stdout)
	}
	// The planted service ranks first; its allocation shows as the
	// collector's share of its CPU (which of GC001 or CPU001 on the
	// allocating function ranks first within it varies run to run).
	gc := -1.0
	for _, sv := range rep.Savings {
		if sv.Service == "checkout" && sv.Class == "gc-pressure" {
			gc = sv.Impact
		}
	}
	if top := rep.Savings[0]; top.Service != "checkout" || top.Cores == nil || *top.Cores <= 0 || gc < 0.1 {
		for _, sv := range rep.Savings[:min(4, len(rep.Savings))] {
			t.Logf("saving %d: %s %s impact %.2f cores %v", sv.Rank, sv.Service, sv.Class, sv.Impact, sv.Cores)
		}
		t.Fatalf("want checkout first in cores with gc-pressure of at least 10%% of its CPU, got %s %s first, gc-pressure %.2f", top.Service, top.Class, gc)
	}
	for _, s := range rep.Services {
		if len(s.Instances) != 2 || s.Collected != 2 || s.CPUSource != fleet.CPUFromProfile {
			t.Errorf("service %s: want 2 instances read, cores from profiles; got %d instances, %d read, %s: %+v", s.Name, len(s.Instances), s.Collected, s.CPUSource, s.Instances)
		}
	}
	if !strings.HasPrefix(rep.Store, "pyroscope http://127.0.0.1:") || rep.From == nil || rep.To == nil {
		t.Errorf("the report names its store and range: store %q from %v to %v", rep.Store, rep.From, rep.To)
	}

	// A kept instance is a bundle diagnose reads.
	var kept string
	for _, s := range rep.Services {
		if s.Name == "checkout" && len(s.Instances) > 0 {
			kept = filepath.Join(out, s.Instances[0].Bundle)
		}
	}
	if code, _, stderr := perfdoctor(t, "diagnose", kept); code != 0 || kept == out {
		t.Errorf("diagnose of a kept instance %q: exit %d\n%s", kept, code, stderr)
	}

	code, stdout, stderr = perfdoctor(t, "history", "--db", db)
	if code != 0 || !strings.Contains(stdout, "checkout") || !strings.Contains(stdout, "gc-pressure") {
		t.Fatalf("history after fleet --pyroscope --record: exit %d\n%s\n%s", code, stdout, stderr)
	}

	// One run per service: no baseline yet, nothing judged, exit 0.
	if code, stdout, stderr := perfdoctor(t, "history", "--regressions", "--db", db); code != 0 {
		t.Errorf("history --regressions after one store run: exit %d\n%s%s", code, stdout, stderr)
	}

	code, stdout, stderr = perfdoctor(t, "diagnose", "--pyroscope", hs.URL, "--service", "checkout", "--from", "5m", "-f", "json")
	if code != 0 {
		t.Fatalf("diagnose --pyroscope: exit %d\n%s", code, stderr)
	}
	var one report.Report
	if err := json.Unmarshal([]byte(stdout), &one); err != nil {
		t.Fatalf("report JSON: %v", err)
	}
	if !slices.ContainsFunc(one.Findings, func(f rules.Finding) bool { return f.Class == "gc-pressure" }) {
		t.Errorf("diagnose --pyroscope --service checkout: want gc-pressure, got %+v", one.Findings)
	}
	notChecked := map[string]bool{}
	for _, nc := range one.NotChecked {
		for _, m := range nc.Missing {
			notChecked[string(m)] = true
		}
	}
	if !notChecked["runtime metrics"] && !notChecked["metrics"] {
		t.Errorf("runtime statistics are not in a store: want them listed as missing, got %+v", one.NotChecked)
	}

	code, _, stderr = perfdoctor(t, "diff", "--pyroscope", hs.URL, "--service", "catalog", "5m..2s", "3s..now")
	if code != 0 {
		t.Errorf("diff --pyroscope of two ranges: exit %d\n%s", code, stderr)
	}
}

// TestStoreBadInputs: a store that is not there, a service it does not
// hold, malformed ranges: one line each, non-zero.
func TestStoreBadInputs(t *testing.T) {
	srv := &pyroscopetest.Server{}
	hs := httptest.NewServer(srv.Handler())
	defer hs.Close()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"fleet", "--pyroscope", "http://" + closedPort(t), "-o", filepath.Join(t.TempDir(), "o")}, "connection refused"},
		{[]string{"fleet", "--pyroscope", hs.URL, "-o", filepath.Join(t.TempDir(), "o")}, "holds no profiles"},
		{[]string{"fleet", "--pyroscope", hs.URL, "--prometheus", "http://127.0.0.1:9"}, "one of them"},
		{[]string{"diagnose", "--pyroscope", hs.URL}, "--service"},
		{[]string{"diagnose", "--pyroscope", hs.URL, "--service", "nope"}, "no profiles"},
		{[]string{"diagnose", "--pyroscope", "ftp://x", "--service", "a"}, "want http(s)://host:port"},
		{[]string{"diagnose", "--pyroscope", hs.URL, "--service", "a", "--from", "yesterday"}, "--from"},
		{[]string{"diagnose", "--pyroscope", hs.URL, "--service", "a", "--from", "1m", "--to", "2m"}, "is empty"},
		{[]string{"diff", "--pyroscope", hs.URL, "--service", "a", "1h", "now"}, "FROM..TO"},
	} {
		code, _, stderr := perfdoctor(t, c.args...)
		wantOneLineError(t, code, stderr, c.want)
	}
}

// TestDiagnoseOTLPLikePprof: a real bundle's windowed profiles (a
// Prometheus under GOGC=20, from the corpus) written as an OTLP profiles
// file, as the Collector's file exporter lays it out, diagnose to the same
// findings as the same pprof files do, and fleet --otlp ranks them.
func TestDiagnoseOTLPLikePprof(t *testing.T) {
	const bundle = "../../corpus/go-prometheus-gogc-20/bad"
	var ps []*profile.Profile
	var files []string
	for _, name := range []string{"cpu.pb.gz", "allocs.pb.gz", "mutex.pb.gz", "block.pb.gz"} {
		ps = append(ps, testprof.Read(t, filepath.Join(bundle, name)))
		files = append(files, filepath.Join(bundle, name))
	}
	path := filepath.Join(t.TempDir(), "profiles.json")
	req := otlptest.FromPprof(otlptest.Resource{Attributes: map[string]string{"service.name": "prometheus", "service.instance.id": "prom-1"}, Profiles: ps})
	if err := otlptest.WriteJSONLines(path, req); err != nil {
		t.Fatal(err)
	}
	diag := func(args ...string) report.Report {
		t.Helper()
		code, stdout, stderr := perfdoctor(t, append([]string{"diagnose", "-f", "json"}, args...)...)
		if code != 0 {
			t.Fatalf("diagnose %v: exit %d\n%s", args, code, stderr)
		}
		var rep report.Report
		if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
			t.Fatal(err)
		}
		return rep
	}
	fromPprof, fromOTLP := diag(files...), diag("--otlp", path, "--service", "prometheus")
	if len(fromPprof.Findings) == 0 {
		t.Fatal("the pprof files give no finding: nothing to compare")
	}
	if len(fromOTLP.Findings) != len(fromPprof.Findings) {
		t.Fatalf("OTLP gives %d findings, pprof %d:\n%+v\n%+v", len(fromOTLP.Findings), len(fromPprof.Findings), fromOTLP.Findings, fromPprof.Findings)
	}
	for i, want := range fromPprof.Findings {
		got := fromOTLP.Findings[i]
		if got.Rule != want.Rule || math.Abs(got.Impact-want.Impact) > 0.005 {
			t.Errorf("finding %d: OTLP %s %.3f, pprof %s %.3f", i, got.Rule, got.Impact, want.Rule, want.Impact)
		}
	}

	out := filepath.Join(t.TempDir(), "fleet")
	code, stdout, stderr := perfdoctor(t, "fleet", "--otlp", path, "-o", out, "-f", "json")
	if code != 0 {
		t.Fatalf("fleet --otlp: exit %d\n%s", code, stderr)
	}
	var rep fleet.Report
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Savings) == 0 || rep.Savings[0].Rule != fromPprof.Findings[0].Rule || rep.Savings[0].Cores == nil {
		t.Fatalf("fleet --otlp: want %s first, got %+v", fromPprof.Findings[0].Rule, rep.Savings)
	}
	// The file's span is the range: cores are the CPU profile's CPU time
	// over its own duration.
	if c := rep.Services[0].Cores; c <= 0 {
		t.Errorf("service cores %v, want the CPU profile's", c)
	}
}
