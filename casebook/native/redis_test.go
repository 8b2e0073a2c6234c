package native

import (
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/perfdoctor/perfdoctor/casebook/internal/harness"
)

// startRedis runs Debian's redis-server on loopback with an append-only
// file in a temporary directory, synced as fsync says ("always" or
// "everysec"), and returns its PID and port; it is stopped with the test.
func startRedis(t *testing.T, fsync string) (int, int) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	cmd := exec.Command("redis-server", "--bind", "127.0.0.1", "--port", fmt.Sprint(port), "--dir", t.TempDir(),
		"--appendonly", "yes", "--appendfsync", fsync, "--save", "", "--daemonize", "no", "--protected-mode", "yes")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("redis-server did not listen on %s", addr)
		}
	}
	return cmd.Process.Pid, port
}

// diagnoseRedis runs redis-benchmark (SET, a bounded number of requests)
// against the server while perfdoctor records it with perf, and returns the
// findings.
func diagnoseRedis(t *testing.T, pid, port int) harness.Report {
	t.Helper()
	bench := exec.Command("redis-benchmark", "-h", "127.0.0.1", "-p", fmt.Sprint(port), "-t", "set", "-n", "400000", "-c", "8", "-q")
	if err := bench.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { bench.Process.Kill(); bench.Wait() }()
	time.Sleep(time.Second)
	dir := filepath.Join(t.TempDir(), "bundle")
	out, err := exec.Command(bin.perfdoctor, "collect", "--perf", fmt.Sprint(pid), "-d", "4s", "-o", dir).CombinedOutput()
	if err != nil {
		if strings.Contains(string(out), "not permitted") && !harness.InCI() {
			t.Skipf("perf not permitted here: %s", out)
		}
		t.Fatalf("perfdoctor collect --perf: %v\n%s", err, out)
	}
	return harness.Diagnose(t, bin.perfdoctor, dir)
}

// TestRedisAppendfsync: redis with appendfsync always waits for an
// fdatasync per write command. perf sees the syncs (and the block device
// driver under them); the finding must be sync-disk-write with redis's own
// setting as the fix, and kernel-network-overhead must not count the disk
// work as network. With appendfsync everysec the syncs are gone from the
// request path.
func TestRedisAppendfsync(t *testing.T) {
	harness.Need(t, "linux-perf and redis-server (redis-benchmark comes with it)", "perf", "redis-server", "redis-benchmark")
	t.Run("bad", func(t *testing.T) {
		pid, port := startRedis(t, "always")
		rep := diagnoseRedis(t, pid, port)
		if rep.TooFewSamples("DISK001") && !harness.InCI() {
			t.Skip("the machine is too busy: perf saw too few of redis's samples in fdatasync to judge")
		}
		findings := rep.Findings
		var found bool
		for _, f := range findings {
			switch f.Class {
			case "sync-disk-write":
				found = true
				if !strings.Contains(f.Fix, "appendfsync everysec") {
					t.Errorf("not redis's prescription: %s", f.Fix)
				}
			case "kernel-network-overhead":
				t.Errorf("disk sync work reported as network: %s", f.Summary)
			}
		}
		if !found || findings[0].Class != "sync-disk-write" {
			t.Errorf("sync-disk-write is not the top finding: %+v", findings)
		}
	})
	t.Run("fixed", func(t *testing.T) {
		pid, port := startRedis(t, "everysec")
		for _, f := range diagnoseRedis(t, pid, port).Findings {
			if f.Class == "sync-disk-write" && f.Severity != "info" && f.Severity != "low" {
				t.Errorf("syncs reported with appendfsync everysec: %s %s", f.Severity, f.Summary)
			}
		}
	})
}
