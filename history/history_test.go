package history

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/perfdoctor/perfdoctor/internal/fleettest"
)

func TestStoreSQLite(t *testing.T) {
	testStore(t, filepath.Join(t.TempDir(), "sub", "history.db"))
}

func TestStorePostgres(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a PostgreSQL cluster")
	}
	testStore(t, fleettest.Postgres(t))
}

// testStore checks the contract both databases share: migrations applied
// once (a second Open is a no-op), runs and findings round-trip in order,
// and the last N per target.
func testStore(t *testing.T, dsn string) {
	ctx := context.Background()
	s, err := Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	cores := 11.8
	gc := 3.1
	for i := 0; i < 3; i++ {
		for _, target := range []string{"checkout", "catalog"} {
			_, err := s.Record(ctx, Run{Kind: KindService, Target: target, At: t0.Add(time.Duration(i) * time.Hour), Tool: "perfdoctor test",
				Bundle: "/b/" + target, Cores: &cores, Findings: []Finding{
					{Rule: "GC001", Class: "gc-pressure", Severity: "high", Impact: 0.26 + float64(i)/100, Resource: "cpu", Cores: &gc, Summary: "GC"},
					{Rule: "MEM002", Class: "memory-growth", Severity: "low", Impact: 0.1, Resource: "memory", Summary: "grows"},
				}})
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	s.Close()
	if s, err = Open(ctx, dsn); err != nil { // migrations already applied
		t.Fatalf("reopening: %v", err)
	}
	defer s.Close()
	var version int
	if err := s.db.QueryRowContext(ctx, `SELECT MAX(version) FROM schema_migrations`).Scan(&version); err != nil || version != SchemaVersion {
		t.Fatalf("schema version %d (%v), want %d", version, err, SchemaVersion)
	}
	runs, err := s.Runs(ctx, "checkout", 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 2 || !runs[0].At.Equal(t0.Add(time.Hour)) || !runs[1].At.Equal(t0.Add(2*time.Hour)) {
		t.Fatalf("last 2 runs of checkout: %+v", runs)
	}
	r := runs[1]
	if r.Target != "checkout" || r.Kind != KindService || r.Cores == nil || *r.Cores != cores || r.Bundle != "/b/checkout" || len(r.Findings) != 2 {
		t.Fatalf("run read back: %+v", r)
	}
	if f := r.Findings[0]; f.Class != "gc-pressure" || f.Impact != 0.28 || f.Cores == nil || *f.Cores != gc || r.Findings[1].Cores != nil {
		t.Errorf("findings read back: %+v", r.Findings)
	}
	all, err := s.Runs(ctx, "", 0)
	if err != nil || len(all) != 6 || all[0].Target != "catalog" {
		t.Errorf("all runs: %d (%v)", len(all), err)
	}
}

func TestOpenErrors(t *testing.T) {
	ctx := context.Background()
	_, err := Open(ctx, "postgres://perf:s3cret@127.0.0.1:1/perf?connect_timeout=2")
	if err == nil || strings.Contains(err.Error(), "s3cret") || !strings.Contains(err.Error(), "perf:REDACTED@") {
		t.Errorf("unreachable postgres: %v (want an error naming it, password redacted)", err)
	}
	dir := t.TempDir()
	if _, err := Open(ctx, dir); err == nil {
		t.Errorf("a directory as the database file: no error")
	}
}

func TestNewerSchemaRefused(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "h.db")
	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.db.ExecContext(ctx, `INSERT INTO schema_migrations (version, applied_unix_ms) VALUES (99, 0)`); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if _, err := Open(ctx, path); err == nil || !strings.Contains(err.Error(), "newer than this perfdoctor") {
		t.Errorf("a database from a newer perfdoctor: %v", err)
	}
}

func run(target string, at int, impacts map[string]float64) Run {
	r := Run{Target: target, At: time.Unix(int64(at)*3600, 0)}
	for c, v := range impacts {
		r.Findings = append(r.Findings, Finding{Class: c, Rule: "R-" + c, Impact: v})
	}
	return r
}

func TestRegressions(t *testing.T) {
	steady := []Run{
		run("a", 1, map[string]float64{"gc-pressure": 0.20}),
		run("a", 2, map[string]float64{"gc-pressure": 0.24}),
		run("a", 3, map[string]float64{"gc-pressure": 0.18}),
	}
	for _, tc := range []struct {
		name   string
		runs   []Run
		want   []string // target/class regressed
		minDel float64
	}{
		{"within the noise", append(steady, run("a", 4, map[string]float64{"gc-pressure": 0.26})), nil, 0},
		{"grew beyond the noise", append(steady, run("a", 4, map[string]float64{"gc-pressure": 0.45})), []string{"a/gc-pressure"}, 0},
		{"a new finding", append(steady, run("a", 4, map[string]float64{"gc-pressure": 0.2, "lock-contention": 0.12})), []string{"a/lock-contention"}, 0},
		{"a new finding below the floor", append(steady, run("a", 4, map[string]float64{"gc-pressure": 0.2, "lock-contention": 0.03})), nil, 0},
		{"a higher floor", append(steady, run("a", 4, map[string]float64{"gc-pressure": 0.45})), nil, 0.3},
		{"one run has no baseline", []Run{run("b", 1, map[string]float64{"gc-pressure": 0.9})}, nil, 0},
		{"two identical runs, then growth", []Run{
			run("c", 1, map[string]float64{"hot-function": 0.1}), run("c", 2, map[string]float64{"hot-function": 0.1}),
			run("c", 3, map[string]float64{"hot-function": 0.16}),
		}, []string{"c/hot-function"}, 0},
		{"only the latest run is judged", []Run{
			run("d", 1, map[string]float64{"x": 0.1}), run("d", 2, map[string]float64{"x": 0.5}), run("d", 3, map[string]float64{"x": 0.5}),
		}, nil, 0},
		{"a finding that shrank", append(steady, run("a", 4, map[string]float64{"gc-pressure": 0.01})), nil, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, r := range Regressions(tc.runs, tc.minDel) {
				got = append(got, r.Target+"/"+r.Class)
				if r.Latest-r.Mean <= r.Threshold {
					t.Errorf("%+v: reported but within its threshold", r)
				}
			}
			if strings.Join(got, ",") != strings.Join(tc.want, ",") {
				t.Errorf("regressions %v, want %v", got, tc.want)
			}
		})
	}
}

func TestRedactDSN(t *testing.T) {
	for in, want := range map[string]string{
		"postgres://perf:pw@db:5432/perf":             "postgres://perf:REDACTED@db:5432/perf",
		"postgres://db/perf?user=perf&password=pw":    "postgres://db/perf?password=REDACTED&user=perf",
		"postgres:///perf?host=/tmp/sock":             "postgres:///perf?host=/tmp/sock",
		"/home/me/.local/share/perfdoctor/history.db": "/home/me/.local/share/perfdoctor/history.db",
	} {
		if got := RedactDSN(in); got != want {
			t.Errorf("RedactDSN(%q) = %q, want %q", in, got, want)
		}
	}
}
