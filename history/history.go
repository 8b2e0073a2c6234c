// Package history records every diagnosis (a single target's or each
// service of a fleet run) in a SQL database, and reads each finding class
// over time back to spot regressions. The default store is an embedded
// single-file SQLite database (modernc.org/sqlite, no server, no cgo) in the
// user's data directory; a postgres:// URL selects PostgreSQL (pgx) with the
// same schema and migrations.
package history

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // driver "pgx"

	"github.com/perfdoctor/perfdoctor/internal/redact"
	"github.com/perfdoctor/perfdoctor/rules"
	_ "modernc.org/sqlite" // driver "sqlite"
)

// Kinds of a recorded run.
const (
	KindTarget  = "target"  // one process, from collect/diagnose
	KindService = "service" // a service of a fleet run, its instances merged
)

// Run is one recorded diagnosis.
type Run struct {
	ID     int64     `json:"id"`
	Kind   string    `json:"kind"`
	Target string    `json:"target"` // the service name or the target's address
	At     time.Time `json:"at"`
	Tool   string    `json:"tool"`             // perfdoctor version
	Bundle string    `json:"bundle,omitempty"` // where the evidence is kept
	// Cores is the CPU the target used, when known (fleet runs).
	Cores *float64 `json:"cores,omitempty"`
	// Fleet groups the services of one fleet run (its start, RFC 3339).
	Fleet    string    `json:"fleet,omitempty"`
	Findings []Finding `json:"findings"`
}

// Finding is what history keeps of a finding.
type Finding struct {
	Rule     string   `json:"rule"`
	Class    string   `json:"class"`
	Severity string   `json:"severity"`
	Impact   float64  `json:"impact"`
	Resource string   `json:"resource"`
	Cores    *float64 `json:"cores,omitempty"`
	Summary  string   `json:"summary"`
}

// Store is an open history database.
type Store struct {
	db      *sql.DB
	dialect dialect
	// Where is the database as shown to people: a path, or a URL with its
	// password redacted.
	Where string
}

type dialect struct {
	name     string
	idColumn string
	dollar   bool // placeholders are $1, $2... instead of ?
}

var (
	sqliteDialect   = dialect{name: "sqlite", idColumn: "INTEGER PRIMARY KEY AUTOINCREMENT"}
	postgresDialect = dialect{name: "postgres", idColumn: "BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY", dollar: true}
)

// bind rewrites ? placeholders for the dialect.
func (d dialect) bind(q string) string {
	if !d.dollar {
		return q
	}
	var b strings.Builder
	n := 0
	for _, r := range q {
		if r == '?' {
			n++
			b.WriteString("$" + strconv.Itoa(n))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// DefaultPath is the embedded database's file: $XDG_DATA_HOME/perfdoctor/
// history.db, else ~/.local/share/perfdoctor/history.db.
func DefaultPath() (string, error) {
	dir := os.Getenv("XDG_DATA_HOME")
	if dir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("history: no data directory: %w", err)
		}
		dir = filepath.Join(home, ".local", "share")
	}
	return filepath.Join(dir, "perfdoctor", "history.db"), nil
}

// Open opens (creating and migrating as needed) the database named by dsn:
// "" for DefaultPath, a file path or sqlite:PATH for SQLite, or a
// postgres:// or postgresql:// URL for PostgreSQL.
func Open(ctx context.Context, dsn string) (*Store, error) {
	var s *Store
	switch {
	case strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://"):
		db, err := sql.Open("pgx", dsn)
		if err != nil {
			return nil, fmt.Errorf("history %s: %w", RedactDSN(dsn), err)
		}
		s = &Store{db: db, dialect: postgresDialect, Where: RedactDSN(dsn)}
	default:
		path := strings.TrimPrefix(dsn, "sqlite:")
		if path == "" {
			var err error
			if path, err = DefaultPath(); err != nil {
				return nil, err
			}
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			return nil, fmt.Errorf("history %s: %w", path, err)
		}
		q := url.Values{"_pragma": {"busy_timeout(10000)", "foreign_keys(1)", "journal_mode(WAL)"}}
		db, err := sql.Open("sqlite", "file:"+path+"?"+q.Encode())
		if err != nil {
			return nil, fmt.Errorf("history %s: %w", path, err)
		}
		s = &Store{db: db, dialect: sqliteDialect, Where: path}
	}
	if err := s.migrate(ctx); err != nil {
		s.db.Close()
		return nil, fmt.Errorf("history %s: %w", s.Where, redactErr(err, dsn))
	}
	return s, nil
}

// Close closes the database.
func (s *Store) Close() error { return s.db.Close() }

// RedactDSN shows a database URL with its credentials hidden, as every
// URL perfdoctor shows; a file path is shown as it is.
func RedactDSN(dsn string) string {
	u, err := url.Parse(dsn)
	if err != nil || u.Scheme == "" {
		if i := strings.LastIndex(dsn, "@"); i >= 0 && err != nil {
			return redact.Redacted + dsn[i:]
		}
		return dsn
	}
	return redact.URL(u)
}

// redactErr keeps a driver's error from repeating the password.
func redactErr(err error, dsn string) error {
	u, perr := url.Parse(dsn)
	if perr != nil {
		return err
	}
	pw, ok := u.User.Password()
	if !ok || pw == "" || !strings.Contains(err.Error(), pw) {
		return err
	}
	return errors.New(strings.ReplaceAll(err.Error(), pw, redact.Redacted))
}

// migrations are applied in order, each once, recorded in
// schema_migrations; both dialects run the same list.
var migrations = []func(d dialect) []string{
	1: func(d dialect) []string {
		return []string{
			`CREATE TABLE runs (
				id ` + d.idColumn + `,
				kind TEXT NOT NULL,
				target TEXT NOT NULL,
				at_unix_ms BIGINT NOT NULL,
				tool TEXT NOT NULL,
				bundle TEXT NOT NULL DEFAULT '',
				cores DOUBLE PRECISION,
				fleet TEXT NOT NULL DEFAULT ''
			)`,
			`CREATE INDEX runs_target_at ON runs (target, at_unix_ms)`,
			`CREATE TABLE findings (
				run_id BIGINT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
				rule TEXT NOT NULL,
				class TEXT NOT NULL,
				severity TEXT NOT NULL,
				impact DOUBLE PRECISION NOT NULL,
				resource TEXT NOT NULL,
				cores DOUBLE PRECISION,
				summary TEXT NOT NULL
			)`,
			`CREATE INDEX findings_run ON findings (run_id)`,
		}
	},
}

// SchemaVersion is the version the migrations bring a database to.
var SchemaVersion = len(migrations) - 1

func (s *Store) migrate(ctx context.Context) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if s.dialect.name == "postgres" {
		// Two perfdoctors migrating one database at once wait for each other.
		if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock(7170017)`); err != nil {
			return err
		}
	}
	if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, applied_unix_ms BIGINT NOT NULL)`); err != nil {
		return fmt.Errorf("schema_migrations: %w", err)
	}
	var current int
	if err := tx.QueryRowContext(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_migrations`).Scan(&current); err != nil {
		return fmt.Errorf("schema version: %w", err)
	}
	if current > SchemaVersion {
		return fmt.Errorf("the database is at schema version %d, newer than this perfdoctor's %d: upgrade perfdoctor", current, SchemaVersion)
	}
	for v := current + 1; v <= SchemaVersion; v++ {
		for _, stmt := range migrations[v](s.dialect) {
			if _, err := tx.ExecContext(ctx, stmt); err != nil {
				return fmt.Errorf("migration %d: %w", v, err)
			}
		}
		if _, err := tx.ExecContext(ctx, s.dialect.bind(`INSERT INTO schema_migrations (version, applied_unix_ms) VALUES (?, ?)`), v, time.Now().UnixMilli()); err != nil {
			return fmt.Errorf("migration %d: %w", v, err)
		}
	}
	return tx.Commit()
}

// Record stores a run and its findings in one transaction and returns the
// run's ID.
func (s *Store) Record(ctx context.Context, r Run) (int64, error) {
	if r.Target == "" || r.Kind == "" {
		return 0, errors.New("history: a run needs a kind and a target")
	}
	if r.At.IsZero() {
		r.At = time.Now()
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return 0, fmt.Errorf("history %s: %w", s.Where, err)
	}
	defer tx.Rollback()
	var id int64
	err = tx.QueryRowContext(ctx, s.dialect.bind(`INSERT INTO runs (kind, target, at_unix_ms, tool, bundle, cores, fleet) VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING id`),
		r.Kind, r.Target, r.At.UnixMilli(), r.Tool, r.Bundle, r.Cores, r.Fleet).Scan(&id)
	if err != nil {
		return 0, fmt.Errorf("history %s: recording run: %w", s.Where, err)
	}
	ins := s.dialect.bind(`INSERT INTO findings (run_id, rule, class, severity, impact, resource, cores, summary) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`)
	for _, f := range r.Findings {
		if _, err := tx.ExecContext(ctx, ins, id, f.Rule, f.Class, f.Severity, f.Impact, f.Resource, f.Cores, f.Summary); err != nil {
			return 0, fmt.Errorf("history %s: recording finding: %w", s.Where, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return 0, fmt.Errorf("history %s: %w", s.Where, err)
	}
	return id, nil
}

// Runs returns the last runs of each target (all targets when target is
// ""), oldest first, with their findings; last <= 0 means all.
func (s *Store) Runs(ctx context.Context, target string, last int) ([]Run, error) {
	q := `SELECT id, kind, target, at_unix_ms, tool, bundle, cores, fleet FROM runs`
	var args []any
	if target != "" {
		q += ` WHERE target = ?`
		args = append(args, target)
	}
	q += ` ORDER BY target, at_unix_ms, id`
	rows, err := s.db.QueryContext(ctx, s.dialect.bind(q), args...)
	if err != nil {
		return nil, fmt.Errorf("history %s: %w", s.Where, err)
	}
	var runs []Run
	byID := map[int64]int{}
	for rows.Next() {
		var r Run
		var at int64
		var cores sql.NullFloat64
		if err := rows.Scan(&r.ID, &r.Kind, &r.Target, &at, &r.Tool, &r.Bundle, &cores, &r.Fleet); err != nil {
			rows.Close()
			return nil, fmt.Errorf("history %s: %w", s.Where, err)
		}
		r.At = time.UnixMilli(at).UTC()
		if cores.Valid {
			r.Cores = &cores.Float64
		}
		r.Findings = []Finding{}
		runs = append(runs, r)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("history %s: %w", s.Where, err)
	}
	runs = keepLast(runs, last)
	for i, r := range runs {
		byID[r.ID] = i
	}
	if len(runs) == 0 {
		return runs, nil
	}
	fq := `SELECT f.run_id, f.rule, f.class, f.severity, f.impact, f.resource, f.cores, f.summary FROM findings f JOIN runs r ON r.id = f.run_id`
	if target != "" {
		fq += ` WHERE r.target = ?`
	}
	fq += ` ORDER BY f.run_id, f.impact DESC`
	frows, err := s.db.QueryContext(ctx, s.dialect.bind(fq), args...)
	if err != nil {
		return nil, fmt.Errorf("history %s: %w", s.Where, err)
	}
	defer frows.Close()
	for frows.Next() {
		var id int64
		var f Finding
		var cores sql.NullFloat64
		if err := frows.Scan(&id, &f.Rule, &f.Class, &f.Severity, &f.Impact, &f.Resource, &cores, &f.Summary); err != nil {
			return nil, fmt.Errorf("history %s: %w", s.Where, err)
		}
		if cores.Valid {
			f.Cores = &cores.Float64
		}
		if i, ok := byID[id]; ok {
			runs[i].Findings = append(runs[i].Findings, f)
		}
	}
	return runs, frows.Err()
}

// keepLast keeps the last n runs of each target from runs sorted by target
// then time.
func keepLast(runs []Run, n int) []Run {
	if n <= 0 {
		return runs
	}
	var out []Run
	for i := 0; i < len(runs); {
		j := i
		for j < len(runs) && runs[j].Target == runs[i].Target {
			j++
		}
		out = append(out, runs[max(i, j-n):j]...)
		i = j
	}
	return out
}

// FindingsOf converts a diagnosis' findings; serviceCores > 0 also gives
// each CPU finding the cores it would recover.
func FindingsOf(fs []rules.Finding, serviceCores float64) []Finding {
	out := make([]Finding, 0, len(fs))
	for _, f := range fs {
		h := Finding{Rule: f.Rule, Class: f.Class, Severity: f.Severity.String(), Impact: f.Impact, Resource: f.Resource, Summary: f.Summary}
		if serviceCores > 0 && (f.Resource == "" || f.Resource == "cpu") {
			c := f.Impact * serviceCores
			h.Cores = &c
		}
		out = append(out, h)
	}
	return out
}
