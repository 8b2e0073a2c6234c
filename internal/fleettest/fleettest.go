// Package fleettest starts the real parts the fleet and history tests run
// against, on loopback: casebook services as separate processes exporting
// client_golang's process metrics, a Prometheus scraping them, and a
// throwaway PostgreSQL cluster. A tool that is missing skips the test on a
// developer's machine and fails it under CI, where scripts/test.sh
// installs it.
package fleettest

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/perfdoctor/perfdoctor/casebook/serve"
	"github.com/perfdoctor/perfdoctor/internal/supervise"
	"github.com/perfdoctor/perfdoctor/load"
)

// serviceEnv, set in a test binary's environment, makes MaybeServe run a
// service instead of the tests: "CASE VARIANT RATE".
const serviceEnv = "PERFDOCTOR_FLEETTEST_SERVICE"

// maxServiceLife stops a service whose test died without stopping it.
const maxServiceLife = 5 * time.Minute

// MaybeServe, called first in TestMain, turns the test binary into a
// service when Service started it: the casebook case on its own listeners,
// its process metrics on a third, and a steady open-loop load on itself.
// It prints "ready metrics=URL pprof=URL" and serves until SIGTERM.
func MaybeServe() {
	spec := os.Getenv(serviceEnv)
	if spec == "" {
		return
	}
	os.Exit(runService(spec))
}

func runService(spec string) int {
	f := strings.Fields(spec)
	if len(f) != 3 {
		fmt.Fprintf(os.Stderr, "%s=%q: want CASE VARIANT RATE\n", serviceEnv, spec)
		return 2
	}
	rate, err := strconv.ParseFloat(f[2], 64)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, maxServiceLife)
	defer cancel()
	svc, err := serve.Start(ctx, f[0], f[1], "", "")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}), collectors.NewGoCollector())
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	go http.Serve(ln, mux)
	go func() {
		if _, err := load.Run(ctx, load.Config{URL: svc.AppURL, Rate: rate, Concurrency: 4, Duration: maxServiceLife}); err != nil && ctx.Err() == nil {
			fmt.Fprintln(os.Stderr, "load:", err)
		}
	}()
	fmt.Printf("ready metrics=http://%s pprof=%s\n", ln.Addr(), svc.PprofURL)
	<-ctx.Done()
	svc.Close()
	return 0
}

// InCI reports whether the tests run under CI ($CI set).
func InCI() bool {
	v := strings.ToLower(os.Getenv("CI"))
	return v != "" && v != "0" && v != "false"
}

// Missing skips the test, or fails it under CI, for a missing tool.
func Missing(t testing.TB, what, install string) {
	t.Helper()
	if InCI() {
		t.Fatalf("CI is set and %s is missing: scripts/test.sh installs %s", what, install)
	}
	t.Skipf("skipped: %s is missing (apt-get install %s)", what, install)
}

// Service is a running service process.
type Service struct {
	Metrics string // http://host:port serving /metrics
	Pprof   string // http://host:port serving /debug/pprof/
}

// StartService runs a casebook case as a separate process (this test
// binary again, through MaybeServe) loaded at rate requests per second,
// stopped with the test.
func StartService(t testing.TB, caseName, variant string, rate float64) *Service {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s %s %g", serviceEnv, caseName, variant, rate))
	cmd.Stderr = os.Stderr
	line := startProcess(t, cmd, "ready ", 30*time.Second)
	s := &Service{}
	for _, f := range strings.Fields(line) {
		if v, ok := strings.CutPrefix(f, "metrics="); ok {
			s.Metrics = v
		}
		if v, ok := strings.CutPrefix(f, "pprof="); ok {
			s.Pprof = v
		}
	}
	if s.Metrics == "" || s.Pprof == "" {
		t.Fatalf("service %s/%s printed %q", caseName, variant, line)
	}
	return s
}

// startProcess runs cmd until the test ends (the shared supervisor's
// stop: SIGTERM, then SIGKILL) and returns the rest of its first stdout
// line starting with prefix.
func startProcess(t testing.TB, cmd *exec.Cmd, prefix string, timeout time.Duration) string {
	t.Helper()
	p, rest, err := supervise.StartLine(context.Background(), cmd, prefix, timeout)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Stop)
	return rest
}

// run starts cmd until the test ends.
func run(t testing.TB, cmd *exec.Cmd) {
	t.Helper()
	p, err := supervise.Start(cmd, false)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Stop)
}

// Target is one scrape target of a Prometheus job.
type Target struct {
	Address string            // host:port of /metrics
	Labels  map[string]string // extra target labels
}

// Prometheus runs Debian's prometheus scraping jobs (name -> targets) every
// second, and returns its base URL once every target has been scraped at
// least 8 times: rate() divides by its whole range, so a range of up to 5s
// then measures the instances' true CPU rate.
func Prometheus(t testing.TB, jobs map[string][]Target) string {
	t.Helper()
	bin, err := exec.LookPath("prometheus")
	if err != nil {
		Missing(t, "prometheus", "prometheus")
	}
	dir := t.TempDir()
	type staticConfig struct {
		Targets []string          `json:"targets"`
		Labels  map[string]string `json:"labels,omitempty"`
	}
	type scrapeConfig struct {
		JobName       string         `json:"job_name"`
		StaticConfigs []staticConfig `json:"static_configs"`
	}
	cfg := struct {
		Global        map[string]string `json:"global"`
		ScrapeConfigs []scrapeConfig    `json:"scrape_configs"`
	}{Global: map[string]string{"scrape_interval": "1s", "scrape_timeout": "1s"}}
	n := 0
	for job, ts := range jobs {
		sc := scrapeConfig{JobName: job}
		for _, tg := range ts {
			sc.StaticConfigs = append(sc.StaticConfigs, staticConfig{Targets: []string{tg.Address}, Labels: tg.Labels})
			n++
		}
		cfg.ScrapeConfigs = append(cfg.ScrapeConfigs, sc)
	}
	// YAML is a superset of JSON.
	b, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	cfgPath := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfgPath, b, 0o644); err != nil {
		t.Fatal(err)
	}
	addr := freeAddr(t)
	cmd := exec.Command(bin, "--config.file="+cfgPath, "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+addr, "--log.level=warn")
	cmd.Stdout, cmd.Stderr = nil, nil
	run(t, cmd)
	base := "http://" + addr
	q := url.Values{"query": {"count_over_time(process_cpu_seconds_total[1m]) >= 8"}}
	deadline := time.Now().Add(60 * time.Second)
	for {
		var doc struct {
			Data struct {
				Result []json.RawMessage `json:"result"`
			} `json:"data"`
		}
		resp, err := http.Get(base + "/api/v1/query?" + q.Encode())
		if err == nil {
			json.NewDecoder(resp.Body).Decode(&doc)
			resp.Body.Close()
			if len(doc.Data.Result) >= n {
				return base
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("prometheus at %s: not all %d targets were scraped 8 times within 60s (last error: %v)", base, n, err)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// freeAddr is a loopback address with a port free a moment ago, for servers
// that cannot report the port they picked.
func freeAddr(t testing.TB) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// Postgres runs a throwaway cluster (initdb in a temporary directory,
// listening only on a unix socket there) and returns its postgres:// URL.
// As root it runs the server as the user nobody, since postgres refuses
// root.
func Postgres(t testing.TB) string {
	t.Helper()
	return StartPostgres(t, false).DSN
}

// PostgresServer is a throwaway PostgreSQL cluster.
type PostgresServer struct {
	DSN    string // postgres:// over the unix socket
	PID    int    // the postmaster
	Socket string // the unix socket's directory
	Port   int    // on 127.0.0.1 too when started with tcp
	User   string

	dir  string             // data and socket, removed by Stop
	proc *supervise.Process // the postmaster
}

// StartPostgres is Postgres that also listens on a free loopback port
// when tcp is set, and says where it runs.
func StartPostgres(t testing.TB, tcp bool) *PostgresServer {
	t.Helper()
	srv, err := LaunchPostgres(tcp)
	if errors.Is(err, ErrNoPostgres) {
		Missing(t, "PostgreSQL's initdb and postgres", "postgresql")
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	return srv
}

// ErrNoPostgres is LaunchPostgres's error when PostgreSQL's initdb and
// postgres are not installed.
var ErrNoPostgres = errors.New("PostgreSQL's initdb and postgres are missing")

// LaunchPostgres is StartPostgres without a test: for a cluster the tests
// of a package share (each in a database of its own, NewDatabase), which
// its caller stops with Stop.
func LaunchPostgres(tcp bool) (_ *PostgresServer, err error) {
	initdb, postgres := pgTool("initdb"), pgTool("postgres")
	if initdb == "" || postgres == "" {
		return nil, ErrNoPostgres
	}
	dir, err := os.MkdirTemp("", "perfdoctor-pg")
	if err != nil {
		return nil, err
	}
	srv := &PostgresServer{Socket: filepath.Join(dir, "sock"), Port: 5432, User: "perfdoctor", dir: dir}
	defer func() {
		if err != nil {
			srv.Stop()
		}
	}()
	data, sock := filepath.Join(dir, "data"), srv.Socket
	for _, d := range []string{data, sock} {
		if err := os.Mkdir(d, 0o700); err != nil {
			return nil, err
		}
	}
	asUser := func(cmd *exec.Cmd) *exec.Cmd { return cmd }
	if os.Geteuid() == 0 {
		u, err := user.Lookup("nobody")
		if err != nil {
			return nil, fmt.Errorf("running postgres as root needs the user nobody: %w", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		for _, d := range []string{dir, data, sock} {
			if err := os.Chown(d, uid, gid); err != nil {
				return nil, err
			}
		}
		asUser = func(cmd *exec.Cmd) *exec.Cmd {
			cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}}
			cmd.Env = append(os.Environ(), "HOME="+dir)
			return cmd
		}
	}
	if out, err := asUser(exec.Command(initdb, "-D", data, "-U", "perfdoctor", "--auth=trust", "--no-sync", "-E", "UTF8")).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("initdb: %w\n%s", err, out)
	}
	listen := ""
	if tcp {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		srv.Port = ln.Addr().(*net.TCPAddr).Port
		ln.Close()
		listen = "127.0.0.1"
	}
	cmd := asUser(exec.Command(postgres, "-D", data, "-k", sock, "-c", "listen_addresses="+listen, "-c", "fsync=off", "-p", strconv.Itoa(srv.Port)))
	if srv.proc, err = supervise.Start(cmd, false); err != nil {
		return nil, err
	}
	srv.PID = cmd.Process.Pid
	srv.DSN = srv.dsn("postgres")
	db, err := sql.Open("pgx", srv.DSN)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := db.Ping()
		if err == nil {
			return srv, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("postgres did not accept connections within 30s: %w", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// dsn is the postgres:// URL of database name over the unix socket.
func (s *PostgresServer) dsn(name string) string {
	return "postgres:///" + name + "?host=" + url.QueryEscape(s.Socket) + "&port=" + strconv.Itoa(s.Port) + "&user=" + s.User + "&sslmode=disable"
}

// NewDatabase creates an empty database in the cluster and returns its
// postgres:// URL: what a test sharing the cluster writes alone.
func (s *PostgresServer) NewDatabase(name string) (string, error) {
	db, err := sql.Open("pgx", s.DSN)
	if err != nil {
		return "", err
	}
	defer db.Close()
	if _, err := db.Exec("CREATE DATABASE " + name); err != nil {
		return "", fmt.Errorf("creating database %s: %w", name, err)
	}
	return s.dsn(name), nil
}

// Stop stops the server and removes its files.
func (s *PostgresServer) Stop() {
	if s.proc != nil {
		s.proc.Stop()
	}
	os.RemoveAll(s.dir)
}

// pgTool finds a PostgreSQL server program: on PATH, else where Debian's
// packages put them (/usr/lib/postgresql/VERSION/bin), newest first.
func pgTool(name string) string {
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	ms, _ := filepath.Glob("/usr/lib/postgresql/*/bin/" + name)
	best, bestV := "", -1
	for _, m := range ms {
		v, err := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(m))))
		if err == nil && v > bestV {
			best, bestV = m, v
		}
	}
	return best
}

// FleetSchema compiles docs/fleet.schema.json from the docs directory,
// with the single-target report's schema it refers to for findings. For
// the fleet report's tests and the CLI's end-to-end test.
func FleetSchema(t testing.TB, docs string) *jsonschema.Schema {
	t.Helper()
	c := jsonschema.NewCompiler()
	f, err := os.Open(filepath.Join(docs, "report.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rep, err := jsonschema.UnmarshalJSON(f)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.AddResource("https://github.com/perfdoctor/perfdoctor/docs/report.schema.json", rep); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile(filepath.Join(docs, "fleet.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// ValidateFleetJSON fails the test when doc does not match the schema.
func ValidateFleetJSON(t testing.TB, s *jsonschema.Schema, doc []byte) {
	t.Helper()
	if err := s.Validate(jsonDoc(t, doc)); err != nil {
		t.Errorf("fleet report does not match docs/fleet.schema.json: %v", err)
	}
}

func jsonDoc(t testing.TB, b []byte) any {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	return doc
}
