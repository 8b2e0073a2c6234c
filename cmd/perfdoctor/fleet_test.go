package main

import (
	"context"
	"encoding/json"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/perfdoctor/perfdoctor/fleet"
	"github.com/perfdoctor/perfdoctor/history"
	"github.com/perfdoctor/perfdoctor/internal/fleettest"
)

// TestMain lets the fleet test run this binary again as a service.
// TestFleetEndToEnd is the acceptance: a real Prometheus scraping
// two services of three instances each, one of them casebook C1 (zlib at
// BestCompression); fleet must rank that problem first in cores with the instance
// list, the merged diagnosis and per-service reports; two recorded runs
// show in history on SQLite and on PostgreSQL, and a planted regression
// fails history --regressions.
func TestFleetEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Prometheus and six services")
	}
	// The package's PostgreSQL cluster, for history-postgres, starts
	// while the services and Prometheus warm up (the test waits for it
	// before it measures).
	go launchSharedPostgres()
	// checkout is C1's bad variant: most of its CPU compresses at zlib's
	// BestCompression, at any load. catalog is the healthy control. Their pprof endpoints come from a target label:
	// a port for one, a whole URL for the other.
	jobs := map[string][]fleettest.Target{}
	for i := 0; i < 3; i++ {
		c1 := fleettest.StartService(t, "c1", "bad", 6)
		pu, _ := url.Parse(c1.Pprof)
		jobs["checkout"] = append(jobs["checkout"], fleettest.Target{Address: strings.TrimPrefix(c1.Metrics, "http://"),
			Labels: map[string]string{"perfdoctor_pprof": pu.Port(), "team": "payments"}})
		ctl := fleettest.StartService(t, "control", "bad", 200)
		jobs["catalog"] = append(jobs["catalog"], fleettest.Target{Address: strings.TrimPrefix(ctl.Metrics, "http://"),
			Labels: map[string]string{"perfdoctor_pprof": ctl.Pprof + "/debug/pprof/", "team": "shop"}})
	}
	prom := fleettest.Prometheus(t, jobs)
	schema := fleettest.FleetSchema(t, "../../docs")
	sqlite := filepath.Join(t.TempDir(), "history.db")
	launchSharedPostgres() // started, or failed to: initdb's CPU is not in the fleet's window

	fleetRun := func(t *testing.T, db string, extra ...string) *fleet.Report {
		t.Helper()
		out := filepath.Join(t.TempDir(), "fleet")
		args := append([]string{"fleet", "--prometheus", prom, "-d", "4s", "--hottest", "2", "--sample", "1", "--cpu-window", "5s",
			"--seed", "7", "-o", out, "-f", "json", "--record", "--db", db}, extra...)
		code, stdout, stderr := perfdoctor(t, args...)
		if code != 0 {
			t.Fatalf("fleet: exit %d\n%s", code, stderr)
		}
		fleettest.ValidateFleetJSON(t, schema, []byte(stdout))
		var rep fleet.Report
		if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
			t.Fatalf("fleet JSON: %v\n%s", err, stdout)
		}
		return &rep
	}

	t.Run("ranking", func(t *testing.T) {
		rep := fleetRun(t, sqlite)
		for _, s := range rep.Savings {
			t.Logf("%d. %s in %s: %.2f of %.2f cores (impact %.2f)", s.Rank, s.Class, s.Service, deref(s.Cores), s.ServiceCores, s.Impact)
		}
		if len(rep.Savings) == 0 || rep.Savings[0].Service != "checkout" || rep.Savings[0].Class != "compression-level" {
			t.Fatalf("first saving is not compression-level in checkout: %+v", rep.Savings)
		}
		first := rep.Savings[0]
		if first.Cores == nil || *first.Cores <= 0 || *first.Cores > first.ServiceCores {
			t.Errorf("compression-level saves %v of %.2f cores: want a positive share of the service", first.Cores, first.ServiceCores)
		}
		if len(rep.Services) != 2 {
			t.Fatalf("services %d, want checkout and catalog", len(rep.Services))
		}
		for _, s := range rep.Services {
			if len(s.Instances) != 3 || s.Collected != 3 || s.CPUSource != fleet.CPUFromPrometheus {
				t.Errorf("%s: %d instances, %d collected, CPU from %s; want 3, 3, prometheus: %+v", s.Name, len(s.Instances), s.Collected, s.CPUSource, s.Instances)
			}
			for _, f := range []string{s.ReportHTML, s.ReportJSON, s.MergedCPU} {
				if _, err := os.Stat(filepath.Join(rep.Dir, f)); err != nil {
					t.Errorf("%s: per-service file: %v", s.Name, err)
				}
			}
			picked := map[string]int{}
			for _, in := range s.Instances {
				t.Logf("%s/%s: %.3f cores (%s), top %+v", s.Name, in.Instance, deref(in.Cores), in.CPUSource, in.Top)
				picked[in.Picked]++
				if in.Cores == nil || in.Bundle == "" || in.Status != fleet.StatusOK {
					t.Errorf("%s/%s: cores %v, bundle %q, status %s (%s)", s.Name, in.Instance, in.Cores, in.Bundle, in.Status, in.Error)
				}
			}
			if picked[fleet.PickedHottest] != 2 || picked[fleet.PickedSample] != 1 {
				t.Errorf("%s: picked %v, want 2 hottest and 1 sample", s.Name, picked)
			}
		}
		if s := rep.Services[0]; s.Name != "catalog" || len(s.Findings) > 0 && s.Findings[0].Class == "compression-level" {
			t.Errorf("the healthy control shows compression-level: %+v", s.Findings)
		}
		html, err := os.ReadFile(filepath.Join(rep.Dir, "fleet.html"))
		if err != nil || !strings.Contains(string(html), `href="checkout/report.html"`) {
			t.Errorf("fleet.html does not link checkout's report: %v", err)
		}
	})

	t.Run("match", func(t *testing.T) {
		code, stdout, stderr := perfdoctor(t, "fleet", "--prometheus", prom, "--match", `team="nobody"`, "-o", filepath.Join(t.TempDir(), "f"))
		if code != exitError || !strings.Contains(stderr, `matches {team="nobody"}`) {
			t.Errorf("a matcher selecting nothing: exit %d\n%s%s", code, stdout, stderr)
		}
	})

	checkHistory := func(t *testing.T, db string) {
		t.Helper()
		code, stdout, stderr := perfdoctor(t, "history", "checkout", "--db", db)
		t.Logf("history:\n%s", stdout)
		if code != 0 || !strings.Contains(stdout, "checkout (service, 2 runs)") || !strings.Contains(stdout, "compression-level") {
			t.Fatalf("history after two recorded runs: exit %d\n%s%s", code, stdout, stderr)
		}
		ctx := context.Background()
		store, err := history.Open(ctx, db)
		if err != nil {
			t.Fatal(err)
		}
		defer store.Close()
		runs, err := store.Runs(ctx, "checkout", 0)
		if err != nil || len(runs) != 2 {
			t.Fatalf("runs %d, %v", len(runs), err)
		}
		// A third run like the second is within the noise...
		same := runs[1]
		same.At = same.At.Add(time.Minute)
		if _, err := store.Record(ctx, same); err != nil {
			t.Fatal(err)
		}
		if code, stdout, stderr := perfdoctor(t, "history", "--regressions", "--db", db); code != 0 {
			t.Fatalf("a run like the last: exit %d, want 0\n%s%s", code, stdout, stderr)
		}
		// ...one where the compression cost grew by 30 points of CPU is not.
		grown := same
		grown.At = grown.At.Add(time.Minute)
		grown.Findings = append([]history.Finding(nil), same.Findings...)
		for i := range grown.Findings {
			if grown.Findings[i].Class == "compression-level" {
				grown.Findings[i].Impact += 0.30
			}
		}
		if _, err := store.Record(ctx, grown); err != nil {
			t.Fatal(err)
		}
		code, stdout, stderr = perfdoctor(t, "history", "--regressions", "--db", db)
		if code != exitRegression || !strings.Contains(stdout, "REGRESSION checkout compression-level") {
			t.Fatalf("planted regression: exit %d, want %d\n%s%s", code, exitRegression, stdout, stderr)
		}
	}

	t.Run("history-sqlite", func(t *testing.T) {
		fleetRun(t, sqlite, "--match", `job="checkout"`)
		checkHistory(t, sqlite)
	})

	t.Run("history-postgres", func(t *testing.T) {
		pg := postgresDatabase(t)
		fleetRun(t, pg, "--match", `job="checkout"`)
		fleetRun(t, pg, "--match", `job="checkout"`)
		checkHistory(t, pg)
	})
}

func deref(p *float64) float64 {
	if p == nil {
		return -1
	}
	return *p
}

// TestFleetBadInput: the contract for bad input, without any server.
func TestFleetBadInput(t *testing.T) {
	db := filepath.Join(t.TempDir(), "h.db")
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"fleet"}, exitUsage, "fleet needs --prometheus URL"},
		{[]string{"fleet", "--prometheus", "http://127.0.0.1:1", "--match", "team"}, exitUsage, "--match: label matcher"},
		{[]string{"fleet", "--prometheus", "http://127.0.0.1:1", "-f", "pdf"}, exitUsage, `unknown --format "pdf"`},
		{[]string{"fleet", "--prometheus", "http://127.0.0.1:1", "--hottest", "0", "--sample", "0"}, exitUsage, "collect at least one instance"},
		{[]string{"fleet", "--prometheus", "prom:9090"}, exitError, "want http(s)://host:port"},
		{[]string{"fleet", "--prometheus", "http://u:s3cret@127.0.0.1:1", "-o", filepath.Join(t.TempDir(), "o")}, exitError, "http://u:REDACTED@127.0.0.1:1: targets:"},
		{[]string{"history", "--db", db, "-f", "xml"}, exitUsage, `unknown --format "xml"`},
		{[]string{"history", "nosuch", "--db", db}, exitError, `nothing recorded for "nosuch"`},
		{[]string{"history", "record", "--db", db, filepath.Join(t.TempDir(), "missing")}, exitError, "missing"},
		{[]string{"history", "record", "--db", db}, exitUsage, "needs at least one PATH"},
	} {
		code, _, stderr := perfdoctor(t, tc.args...)
		if code != tc.code || strings.Count(stderr, "\n") > 2 || !strings.Contains(stderr, tc.want) || strings.Contains(stderr, "s3cret") {
			t.Errorf("%v: exit %d, want %d with %q:\n%s", tc.args, code, tc.code, tc.want, stderr)
		}
	}
}

// TestHistoryRecordBundle records a single target's bundle, twice, and
// reads it back.
func TestHistoryRecordBundle(t *testing.T) {
	db := filepath.Join(t.TempDir(), "h.db")
	dir := t.TempDir()
	writeProfile(t, dir, "cpu.pb.gz", gcHeavy(300))
	for i := 0; i < 2; i++ {
		if code, _, stderr := perfdoctor(t, "history", "record", "--db", db, "--target", "api-1", dir); code != 0 || !strings.Contains(stderr, "recorded run") {
			t.Fatalf("history record: exit %d\n%s", code, stderr)
		}
	}
	code, stdout, stderr := perfdoctor(t, "history", "--db", db, "-f", "json")
	var runs []history.Run
	if code != 0 || json.Unmarshal([]byte(stdout), &runs) != nil || len(runs) != 2 || runs[0].Target != "api-1" || runs[0].Kind != history.KindTarget {
		t.Fatalf("history JSON: exit %d\n%s%s", code, stdout, stderr)
	}
	// The collector's 30% is estimated at 1.3 times (what fixes removed
	// beyond their frames), above the dial's 25% at 1.5 times (what a
	// connection drags).
	if len(runs[1].Findings) < 2 || runs[1].Findings[0].Class != "gc-pressure" || runs[1].Findings[1].Class != "connection-churn" {
		t.Errorf("recorded findings: %+v", runs[1].Findings)
	}
	if code, stdout, _ := perfdoctor(t, "history", "--regressions", "--db", db); code != 0 || !strings.Contains(stdout, "no regressions") {
		t.Errorf("the same bundle twice: exit %d\n%s", code, stdout)
	}
}
