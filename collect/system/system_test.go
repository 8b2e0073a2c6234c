package system

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/perfdoctor/perfdoctor/bundle"
)

// testBuildInfo is this test binary's build info.
func testBuildInfo(t *testing.T) *debug.BuildInfo {
	bi, ok := debug.ReadBuildInfo()
	if !ok || bi.Main.Path == "" || bi.Path == "" {
		t.Fatal("the test binary has no build info")
	}
	return bi
}

// fixtureRoots copies testdata/proc to a temporary directory and adds the
// symlinks a real /proc has (fd entries, exe), which are kept out of
// testdata because module zips drop symlinks.
func fixtureRoots(t *testing.T, sys string) Roots {
	t.Helper()
	proc := filepath.Join(t.TempDir(), "proc")
	if err := os.CopyFS(proc, os.DirFS("testdata/proc")); err != nil {
		t.Fatal(err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	links := map[string]string{
		"1234/fd/0":   "/dev/null",
		"1234/fd/1":   "pipe:[1]",
		"1234/fd/3":   "socket:[55555]", // the established connection
		"1234/fd/4":   "socket:[44444]", // the listener on 6060
		"1234/exe":    exe,              // any Go binary will do for build info
		"999/fd/3":    "socket:[77777]", // [::]:8080
		"999/fd/4":    "socket:[66666]",
		"1234/fd/5":   "socket:[88881]", // connected UDP: 127.0.0.1:5353
		"1234/fd/6":   "socket:[88882]", // the same peer again
		"1234/fd/7":   "socket:[88883]", // 10.0.0.53:53, not on this machine
		"1234/fd/8":   "socket:[88884]", // an unconnected UDP socket
		"1234/fd/9":   "socket:[88885]", // [::1]:5354
		"999/fd/5":    "socket:[77778]", // the UDP server on 127.0.0.1:5353
		"999/fd/6":    "socket:[77779]", // and on [::]:5354
		"2345/fd/0":   "/dev/null",
		"2345/fd/255": "/dev/null",
		"self":        "1234",
		"1234/net":    "../net", // the targets share our network namespace
		"2345/net":    "../net",
		"999/net":     "../net",
	}
	for name, target := range links {
		p := filepath.Join(proc, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, p); err != nil {
			t.Fatal(err)
		}
	}
	return Roots{Proc: proc, Sys: filepath.Join("testdata", sys)}
}

func TestFindPIDByPortFixture(t *testing.T) {
	roots := fixtureRoots(t, "sys-v2")
	for _, tc := range []struct {
		port    int
		pid     int
		wantErr string // substring; ErrNotLocal expected when set
	}{
		{port: 6060, pid: 1234},
		{port: 8080, pid: 999}, // IPv6 listener
		{port: 9090, wantErr: "no process visible"},
		{port: 7070, wantErr: "no local socket listens on port 7070"}, // only a client socket to it
		{port: 1, wantErr: "no local socket"},
	} {
		pid, err := FindPIDByPort(roots, tc.port)
		if tc.wantErr != "" {
			if !errors.Is(err, ErrNotLocal) || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("port %d: got pid %d, err %v; want ErrNotLocal containing %q", tc.port, pid, err, tc.wantErr)
			}
			continue
		}
		if err != nil || pid != tc.pid {
			t.Errorf("port %d: got %d, %v; want %d", tc.port, pid, err, tc.pid)
		}
	}
	if _, err := FindPIDByPort(roots, 70000); err == nil || errors.Is(err, ErrNotLocal) {
		t.Errorf("invalid port: got %v", err)
	}
}

func TestSnapshotFixtureV2(t *testing.T) {
	roots := fixtureRoots(t, "sys-v2")
	snap, err := Snapshot(roots, 1234)
	if err != nil {
		t.Fatal(err)
	}
	if len(snap.Errors) != 0 {
		t.Errorf("errors: %q", snap.Errors)
	}
	m := snap.Machine
	if m.NumCPU != 4 || m.MemTotalBytes != 8000000*1024 || m.MemAvailBytes != 6000000*1024 || m.LoadAvg != [3]float64{0.5, 1.25, 2} {
		t.Errorf("machine = %+v", m)
	}
	p := snap.Process
	if p == nil {
		t.Fatal("no process info")
	}
	checks := []struct {
		name      string
		got, want any
	}{
		{"pid", p.PID, 1234},
		{"comm", p.Comm, "myservice"},
		{"user cpu", p.UserCPUSeconds, 2.5},
		{"system cpu", p.SystemCPUSeconds, 0.5},
		{"threads", p.Threads, 12},
		{"start", p.StartTime, 1700000000.0 + 50},
		{"rss", p.RSSBytes, uint64(204800 * 1024)},
		{"fds", p.OpenFDs, 9},
		{"fd limit", p.FDLimit, uint64(4096)},
		{"vol ctxt", p.VoluntaryCtxt, uint64(100)},
		{"invol ctxt", p.NonvoluntaryCtxt, uint64(7)},
		{"cpus allowed", p.CPUsAllowed, 2},
		{"go version", p.GoVersion, runtime.Version()},
		{"main module", p.Build.Main, testBuildInfo(t).Main.Path},
		{"main package", p.Build.MainPackage, testBuildInfo(t).Path},
		{"cmdline", p.Cmdline, "/usr/bin/myservice --listen=:6060 --db-password=REDACTED --token REDACTED --dsn=postgres://app:REDACTED@db:5432/x"},
		{"env", len(p.GoEnv), 3},
		{"GOGC", p.GoEnv["GOGC"], "50"},
		{"GOMEMLIMIT", p.GoEnv["GOMEMLIMIT"], "900MiB"},
		{"GODEBUG", p.GoEnv["GODEBUG"], "gctrace=0"},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	cg := snap.Cgroup
	if cg == nil {
		t.Fatal("no cgroup info")
	}
	if cg.Version != 2 || cg.Path != "/kubepods/pod1/ctr" || cg.CPUQuotaCores != 1.5 ||
		cg.MemoryLimitBytes != 1<<30 || cg.MemoryUsageBytes != 524288000 ||
		cg.NrPeriods != 5000 || cg.NrThrottled != 1200 || cg.ThrottledUsec != 98765432 {
		t.Errorf("cgroup = %+v", *cg)
	}
	checkNet(t, snap)
}

func TestSnapshotFixtureV1(t *testing.T) {
	roots := fixtureRoots(t, "sys-v1")
	snap, err := Snapshot(roots, 2345)
	if err != nil {
		t.Fatal(err)
	}
	// No exe link: the Go version is missing, and that is recorded, not fatal.
	if len(snap.Errors) != 1 || !strings.HasPrefix(snap.Errors[0], "go version:") {
		t.Errorf("errors = %q", snap.Errors)
	}
	if snap.Process == nil || snap.Process.GoEnv["GOMAXPROCS"] != "3" || snap.Process.OpenFDs != 2 {
		t.Errorf("process = %+v", snap.Process)
	}
	cg := snap.Cgroup
	if cg == nil {
		t.Fatal("no cgroup info")
	}
	if cg.Version != 1 || cg.Path != "/docker/abc" || cg.CPUQuotaCores != 0.5 ||
		cg.MemoryLimitBytes != 512<<20 || cg.MemoryUsageBytes != 256<<20 ||
		cg.NrPeriods != 300 || cg.NrThrottled != 40 || cg.ThrottledUsec != 2500000 {
		t.Errorf("cgroup = %+v", *cg)
	}
}

func TestSnapshotUnlimitedCgroup(t *testing.T) {
	roots := fixtureRoots(t, "sys-v2")
	snap, err := Snapshot(roots, 999)
	if err != nil {
		t.Fatal(err)
	}
	if cg := snap.Cgroup; cg == nil || cg.CPUQuotaCores != 0 || cg.MemoryLimitBytes != 0 {
		t.Errorf("cgroup = %+v, want no limits", cg)
	}
	if got := snap.Process.Cmdline; got != "other -p 8080" {
		t.Errorf("cmdline = %q (a bare -p is a port, not a password)", got)
	}
}

func TestSnapshotMachineOnly(t *testing.T) {
	roots := fixtureRoots(t, "sys-v2")
	snap, err := Snapshot(roots, 0)
	if err != nil {
		t.Fatal(err)
	}
	if snap.Process != nil || snap.Cgroup != nil || snap.Machine.NumCPU != 4 {
		t.Errorf("snapshot = %+v", snap)
	}
	checkNet(t, snap)
	if snap.Net.ProcessSockets || snap.Net.Remotes[0].Process != 0 {
		t.Errorf("a host snapshot marks no process's sockets: %+v", snap.Net.Remotes)
	}
}

// TestRemotesMarkTheTargetsSockets: pid 999 holds the established
// connection to 1.0.0.10:7070 (socket inode 66666); pid 1234 holds none.
func TestRemotesMarkTheTargetsSockets(t *testing.T) {
	roots := fixtureRoots(t, "sys-v2")
	for pid, want := range map[int]int{999: 1, 1234: 0} {
		snap, err := Snapshot(roots, pid)
		if err != nil {
			t.Fatal(err)
		}
		if n := snap.Net; !n.ProcessSockets || len(n.Remotes) != 1 || n.Remotes[0].Process != want {
			t.Errorf("pid %d: %+v", pid, n.Remotes)
		}
	}
}

// A listener the target holds is marked, so its accept queue can be read
// as the queue in front of the target's workers.
func TestListenersMarkTheTargets(t *testing.T) {
	roots := fixtureRoots(t, "sys-v2")
	for pid, want := range map[int]string{1234: "127.0.0.1:6060", 999: "[::]:8080"} {
		snap, err := Snapshot(roots, pid)
		if err != nil {
			t.Fatal(err)
		}
		var own []string
		for _, l := range snap.Net.Listeners {
			if l.Process {
				own = append(own, l.Addr)
			}
		}
		if len(own) != 1 || own[0] != want {
			t.Errorf("pid %d holds %v, want %s (listeners %+v)", pid, own, want, snap.Net.Listeners)
		}
	}
}

// checkNet checks the host part of a fixture snapshot: per-CPU times,
// softirqs, sockets, settings and counters.
func checkNet(t *testing.T, snap *bundle.SystemSnapshot) {
	t.Helper()
	if len(snap.CPUs) != 4 || snap.CPUs[3].CPU != 3 || snap.CPUs[0].User != 1 || snap.CPUs[0].System != 0.5 || snap.CPUs[3].SoftIRQ != 0.02 {
		t.Errorf("cpus = %+v", snap.CPUs)
	}
	if len(snap.NetRxSoftirqs) != 4 || snap.NetRxSoftirqs[0] != 9000000 || snap.NetTxSoftirqs[0] != 16 {
		t.Errorf("softirqs rx %v tx %v", snap.NetRxSoftirqs, snap.NetTxSoftirqs)
	}
	n := snap.Net
	if n == nil {
		t.Fatal("no net info")
	}
	want := bundle.NetSysctls{PortRangeLow: 32768, PortRangeHigh: 60999, TCPFinTimeout: 60, TCPTWReuse: 2,
		TCPMaxTWBuckets: 131072, Somaxconn: 4096, TCPMaxSynBacklog: 2048}
	if n.Sysctls != want || n.Sysctls.EphemeralPorts() != 28232 {
		t.Errorf("sysctls = %+v", n.Sysctls)
	}
	if n.TCPStates["LISTEN"] != 3 || n.TCPStates["ESTABLISHED"] != 2 || n.TCPStates["TIME_WAIT"] != 3 {
		t.Errorf("tcp states = %v", n.TCPStates)
	}
	// One TIME_WAIT entry has 58.9 s left (closed 1.1 s ago), two 39.9 s.
	if len(n.Remotes) != 1 || n.Remotes[0].Addr != "1.0.0.10:7070" || n.Remotes[0].States["TIME_WAIT"] != 3 ||
		n.Remotes[0].Total != 4 || n.Remotes[0].RecentTimeWait != 1 || !n.TimeWaitAges {
		t.Errorf("remotes = %+v", n.Remotes)
	}
	if len(n.Listeners) != 3 || n.Listeners[0].Addr != "0.0.0.0:9090" {
		t.Errorf("listeners = %+v", n.Listeners)
	}
	if n.Counters["TcpExt.ListenOverflows"] != 17 || n.Counters["Tcp.ActiveOpens"] == 0 || n.Counters["TcpExt.SyncookiesSent"] != 0 {
		t.Errorf("counters: overflows %d active opens %d", n.Counters["TcpExt.ListenOverflows"], n.Counters["Tcp.ActiveOpens"])
	}
	if ct := n.Conntrack; ct == nil || ct.Count != 250000 || ct.Max != 262144 {
		t.Errorf("conntrack = %+v", ct)
	}
}

func TestSnapshotMissingProcess(t *testing.T) {
	roots := fixtureRoots(t, "sys-v2")
	if _, err := Snapshot(roots, 4242); err == nil || !strings.Contains(err.Error(), "process 4242 does not exist") {
		t.Errorf("got %v", err)
	}
	// A broken machine file is recorded, not fatal.
	roots.Proc = t.TempDir()
	snap, err := Snapshot(roots, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, part := range []string{"stat:", "meminfo:", "loadavg:", "softirqs:", "net:"} {
		if !strings.Contains(strings.Join(snap.Errors, "\n"), part) {
			t.Errorf("errors = %q, want one for %s", snap.Errors, part)
		}
	}
}

// TestRealProc runs against this machine's /proc with a real listener: the
// test process must find itself.
func TestRealProc(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("needs /proc")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	pid, err := FindPIDByPort(Roots{}, port)
	if err != nil {
		t.Fatal(err)
	}
	if pid != os.Getpid() {
		t.Errorf("pid = %d, want %d", pid, os.Getpid())
	}
	snap, err := Snapshot(Roots{}, pid)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("errors: %q", snap.Errors)
	p := snap.Process
	if p == nil || p.PID != pid || p.Comm == "" || p.Threads < 1 || p.RSSBytes == 0 || p.OpenFDs < 3 || p.GoVersion != runtime.Version() {
		t.Errorf("process = %+v", p)
	}
	if snap.Machine.NumCPU < 1 || snap.Machine.MemTotalBytes == 0 {
		t.Errorf("machine = %+v", snap.Machine)
	}
	ln.Close()
	if _, err := FindPIDByPort(Roots{}, port); !errors.Is(err, ErrNotLocal) {
		t.Errorf("closed port: got %v, want ErrNotLocal", err)
	}
}
