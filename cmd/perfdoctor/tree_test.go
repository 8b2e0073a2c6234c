package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/pprof/profile"

	"github.com/perfdoctor/perfdoctor/bundle"
	"github.com/perfdoctor/perfdoctor/collect/system"
	"github.com/perfdoctor/perfdoctor/internal/fleettest"
	"github.com/perfdoctor/perfdoctor/load"
)

// needTreeTools skips (or, under CI, fails) without perf.
func needTreeTools(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("perf"); err != nil {
		fleettest.Missing(t, "perf", "linux-perf")
	}
	if os.Geteuid() != 0 {
		if b, err := os.ReadFile("/proc/sys/kernel/perf_event_paranoid"); err == nil && strings.TrimSpace(string(b)) > "1" {
			t.Skip("skipped: perf may not record other users' processes here (kernel.perf_event_paranoid > 1, not root)")
		}
	}
}

// treeChecks runs collect --perf and sys --pid on a process whose work is
// in its descendants, and checks each says so: the line naming where the
// CPU went (a group whose command line matches group), the snapshots'
// children, and perf's samples of the descendants with their pids.
func treeChecks(t *testing.T, pid int, group *regexp.Regexp) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "b")
	code, _, stderr := perfdoctor(t, "collect", "--perf", strconv.Itoa(pid), "-d", "3s", "-o", dir)
	if code != 0 {
		t.Fatalf("collect --perf: exit %d\n%s", code, stderr)
	}
	line := treeLine(t, stderr, pid)
	if !group.MatchString(line) {
		t.Errorf("collect --perf: the work is not placed in %s: %s", group, line)
	}
	var end bundle.SystemSnapshot
	readJSONFile(t, filepath.Join(dir, bundle.SystemEndFile), &end)
	if len(end.Children) == 0 || end.Children[0].PPID == 0 {
		t.Errorf("the end snapshot has no children: %+v", end.Children)
	}
	f, err := os.Open(filepath.Join(dir, bundle.PerfFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p, err := profile.Parse(f)
	if err != nil {
		t.Fatal(err)
	}
	var own, children int64
	for _, s := range p.Sample {
		if s.NumLabel["pid"][0] == int64(pid) {
			own += s.Value[0]
		} else {
			children += s.Value[0]
		}
	}
	if children <= own {
		t.Errorf("perf: %d samples of the process, %d of its descendants", own, children)
	}

	code, stdout, stderr := perfdoctor(t, "sys", "--pid", strconv.Itoa(pid), "-d", "2s")
	if code != 0 && code != 1 {
		t.Fatalf("sys --pid: exit %d\n%s", code, stderr)
	}
	if line := treeLine(t, stdout, pid); !group.MatchString(line) {
		t.Errorf("sys --pid: the work is not placed in %s: %s", group, line)
	}
}

// treeLine is the line saying where pid's tree spent its CPU.
func treeLine(t *testing.T, out string, pid int) string {
	t.Helper()
	for _, l := range strings.Split(out, "\n") {
		if i := strings.Index(l, fmt.Sprintf("pid %d (", pid)); i >= 0 && strings.Contains(l, "descendant") {
			t.Log(l[i:])
			return l[i:]
		}
	}
	t.Fatalf("no line on the process tree of %d in:\n%s", pid, out)
	return ""
}

func readJSONFile(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// PostgreSQL under pgbench: the postmaster named is idle; its backends
// serving the clients over loopback do the work.
func TestProcessTreePostgres(t *testing.T) {
	needTreeTools(t)
	pgbench, err := exec.LookPath("pgbench")
	if err != nil {
		fleettest.Missing(t, "pgbench", "postgresql")
	}
	pg := sharedPostgres(t) // pgbench's tables in its database postgres
	args := func(more ...string) []string {
		return append([]string{"-h", "127.0.0.1", "-p", strconv.Itoa(pg.Port), "-U", pg.User}, append(more, "postgres")...)
	}
	if out, err := exec.Command(pgbench, args("-i", "-q", "-s", "1")...).CombinedOutput(); err != nil {
		t.Fatalf("pgbench -i: %v\n%s", err, out)
	}
	// Select-only clients for longer than both windows; pgbench stops by itself.
	bench := exec.Command(pgbench, args("-S", "-c", "4", "-j", "2", "-T", "60")...)
	if err := bench.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { bench.Process.Kill(); bench.Wait() })
	// Under pgbench: its four backends are there before the window.
	for i := 0; i < 100; i++ {
		out, _ := exec.Command("ps", "-o", "args=", "--ppid", strconv.Itoa(pg.PID)).Output()
		if strings.Count(string(out), "postgres: perfdoctor postgres") >= 4 {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	treeChecks(t, pg.PID, regexp.MustCompile(`its \d+ descendants [0-9.]+ cores?: [0-9.]+ in \d+ process(es)? 'postgres: perfdoctor postgres 127\.0\.0\.1 `))
}

// nginxTreeConf is nginx as deployed: a master and two workers.
const nginxTreeConf = `daemon off;
master_process on;
worker_processes 2;
pid %[1]s/nginx.pid;
error_log %[1]s/error.log;
events { worker_connections 256; }
http {
	access_log off;
	client_body_temp_path %[1]s/tmp; proxy_temp_path %[1]s/tmp; fastcgi_temp_path %[1]s/tmp;
	uwsgi_temp_path %[1]s/tmp; scgi_temp_path %[1]s/tmp;
	server {
		listen 127.0.0.1:%[2]d;
		root %[1]s/html;
		gzip on; gzip_types text/plain; gzip_comp_level 6; gzip_min_length 100;
	}
}
`

// nginx under load: the master is idle, its workers serve.
func TestProcessTreeNginx(t *testing.T) {
	needTreeTools(t)
	bin, err := exec.LookPath("nginx")
	if err != nil {
		if _, serr := os.Stat("/usr/sbin/nginx"); serr != nil {
			fleettest.Missing(t, "nginx", "nginx-light")
		}
		bin = "/usr/sbin/nginx"
	}
	dir := t.TempDir()
	for _, d := range []string{"html", "tmp"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "html", "page.txt"), []byte(strings.Repeat("a line of text a server compresses\n", 3000)), 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	conf := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(conf, []byte(fmt.Sprintf(nginxTreeConf, dir, port)), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-c", conf, "-p", dir)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// The whole group: a SIGKILLed master leaves its workers running.
	t.Cleanup(func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); cmd.Wait() })
	url := fmt.Sprintf("http://127.0.0.1:%d/page.txt", port)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if resp, err := http.Get(url); err == nil {
			resp.Body.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("nginx did not answer on %s", url)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		load.Run(ctx, load.Config{URL: url, Concurrency: 4, Duration: 15 * time.Second, Header: http.Header{"Accept-Encoding": {"gzip"}}})
	}()
	t.Cleanup(func() { cancel(); <-done })
	treeChecks(t, cmd.Process.Pid, regexp.MustCompile(`its 2 descendants [0-9.]+ cores?: [0-9.]+ in 2 processes 'nginx: worker process'`))
}

// busyForker is an idle parent running two busy children, forking a third
// during the window; every child stops by itself, after a minute: the
// test's cleanup ends them sooner. With lifetimes of 15 s and 8 s, a run
// beside two CPU hogs took 21 s (collect --perf 3 s and its perf script,
// sys 2 s, each slowed), the children had exited before sys --pid, and
// it read "0.75 in processes that exited" or found the parent gone.
const busyForker = `
timeout --foreground 60 sh -c 'while :; do :; done' &
timeout --foreground 60 sh -c 'while :; do :; done' &
sleep 2
timeout --foreground 60 sh -c 'while :; do :; done' &
wait
`

// busyChildren counts pid's descendants running the busy loop.
func busyChildren(t *testing.T, pid int) int {
	t.Helper()
	tree, err := system.Descendants(system.Roots{}, pid)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, p := range tree {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", p))
		if string(b) == "sh\x00-c\x00while :; do :; done\x00" {
			n++
		}
	}
	return n
}

// A parent that forks busy children: collect --perf follows them (the one
// forked during the window too); --no-children observes the parent alone,
// whose idleness perf then reports.
func TestProcessTreeForkedChildren(t *testing.T) {
	needTreeTools(t)
	cmd := exec.Command("sh", "-c", busyForker)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // one signal ends the tree
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// The whole group: killing the parent alone would leave its busy
		// children running (their timeouts run in the foreground, in this group).
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		cmd.Wait()
	})
	// The first two busy children running, however long the machine takes
	// to start them (a fixed 200 ms was not always enough beside CPU hogs).
	for deadline := time.Now().Add(30 * time.Second); busyChildren(t, cmd.Process.Pid) < 2; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the forker's two busy children did not start within 30 s")
		}
	}
	treeChecks(t, cmd.Process.Pid, regexp.MustCompile(`its \d+ descendants [0-9.]+ cores?: [0-9.]+ in [23] processes 'sh -c "while :; do :; done"'`))

	dir := filepath.Join(t.TempDir(), "alone")
	code, _, stderr := perfdoctor(t, "collect", "--perf", strconv.Itoa(cmd.Process.Pid), "--no-children", "-d", "1s", "-o", dir)
	wantOneLineError(t, code, stderr, "without stacks: perf recorded no samples")
	if strings.Contains(stderr, "descendant") {
		t.Errorf("--no-children spoke of descendants:\n%s", stderr)
	}
	var end bundle.SystemSnapshot
	readJSONFile(t, filepath.Join(dir, bundle.SystemEndFile), &end)
	if len(end.Children) != 0 {
		t.Errorf("--no-children snapshotted %d children", len(end.Children))
	}
	code, _, stderr = perfdoctor(t, "sys", "--no-children")
	wantOneLineError(t, code, stderr, "--no-children goes with --pid")
}
