// Package servers diagnoses real third-party Go servers that the issue
// tracker's users ran perfdoctor on, started by the test on loopback with
// temporary data directories and bounded load.
package servers

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/perfdoctor/perfdoctor/casebook/internal/harness"
	"github.com/perfdoctor/perfdoctor/load"
)

var bin struct{ perfdoctor string }

func TestMain(m *testing.M) {
	harness.Main(m, "servers", map[string]*string{harness.Perfdoctor: &bin.perfdoctor})
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// TestEtcdPuts: Debian's etcd under puts through its JSON gateway. Its WAL
// fdatasync sets the latency of every put but is a few percent of CPU;
// perfdoctor must name it as sync-disk-write, not leave it to the hot
// function's "look for nested loops" advice. Debian's etcd 3.4 serves no
// execution trace, so the finding is the on-CPU view and says so.
func TestEtcdPuts(t *testing.T) {
	harness.Need(t, "etcd-server", "etcd")
	client, peer := freePort(t), freePort(t)
	clientURL, peerURL := fmt.Sprintf("http://127.0.0.1:%d", client), fmt.Sprintf("http://127.0.0.1:%d", peer)
	cmd := exec.Command("etcd", "--name", "t", "--data-dir", t.TempDir(),
		"--listen-client-urls", clientURL, "--advertise-client-urls", clientURL,
		"--listen-peer-urls", peerURL, "--initial-advertise-peer-urls", peerURL,
		"--initial-cluster", "t="+peerURL, "--enable-pprof")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	put := clientURL + "/v3/kv/put"
	body := []byte(`{"key":"Zm9v","value":"YmFy"}`)
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		res, err := load.Run(context.Background(), load.Config{URL: put, Method: "POST", Body: body, Concurrency: 1, Duration: 200 * time.Millisecond})
		if err == nil && res.Requests > 0 && res.Errors == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("etcd did not accept puts on %s: %v", put, err)
		}
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	loaded := make(chan error, 1)
	go func() {
		_, err := load.Run(ctx, load.Config{URL: put, Method: "POST", Body: body, Concurrency: 8, Duration: 9 * time.Second})
		loaded <- err
	}()
	time.Sleep(time.Second)
	dir := filepath.Join(t.TempDir(), "bundle")
	out, err := exec.Command(bin.perfdoctor, "collect", clientURL, "-d", "5s", "-o", dir).CombinedOutput()
	cancel()
	<-loaded
	if _, statErr := os.Stat(filepath.Join(dir, "cpu.pb.gz")); statErr != nil {
		t.Fatalf("perfdoctor collect: %v\n%s", err, out)
	}
	findings := harness.Diagnose(t, bin.perfdoctor, dir).Findings
	var found bool
	for _, f := range findings {
		if f.Class == "sync-disk-write" {
			found = true
		}
		if f.Class == "hot-function" && strings.Contains(f.Summary, "Fdatasync") {
			t.Errorf("the WAL sync left to the hot function: %s", f.Summary)
		}
	}
	if !found {
		t.Errorf("no sync-disk-write finding for etcd's WAL fdatasync: %+v", findings)
	}
}
