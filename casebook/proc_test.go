package casebook

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/perfdoctor/perfdoctor/load"
)

// The casebook binary is built once per test binary, on first use, so plain
// `go test` (which runs no benchmark) pays nothing.
var (
	buildOnce sync.Once
	buildDir  string
	buildBin  string
	buildErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
	os.Exit(code)
}

func casebookBinary(tb testing.TB) string {
	tb.Helper()
	buildOnce.Do(func() {
		if buildDir, buildErr = os.MkdirTemp("", "casebook-bench-"); buildErr != nil {
			return
		}
		buildBin = filepath.Join(buildDir, "casebook")
		cmd := exec.Command("go", "build", "-o", buildBin, "github.com/perfdoctor/perfdoctor/casebook/cmd/casebook")
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build: %w\n%s", err, out)
		}
	})
	if buildErr != nil {
		tb.Fatal(buildErr)
	}
	return buildBin
}

// variantProc is a casebook variant running as a child process.
type variantProc struct {
	cmd      *exec.Cmd
	appURL   string
	pprofURL string
	waitErr  chan error
	exitErr  error // from Wait, once stopped
}

// startVariant runs the casebook binary for one case and variant on loopback
// and waits for its ready line. The process is stopped (by PID) at cleanup.
func startVariant(tb testing.TB, caseName, variant string) *variantProc {
	tb.Helper()
	bin := casebookBinary(tb)
	cmd := exec.Command(bin, "-case", caseName, "-variant", variant, "-listen", "127.0.0.1:0", "-pprof", "127.0.0.1:0")
	// The bad variants must run with the runtime defaults.
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GOGC=") && !strings.HasPrefix(kv, "GOMEMLIMIT=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	p := &variantProc{cmd: cmd, waitErr: make(chan error, 1)}
	tb.Cleanup(p.stop)

	ready := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		if sc.Scan() {
			ready <- sc.Text()
		}
		close(ready)
		for sc.Scan() { // keep the pipe drained
		}
		p.waitErr <- cmd.Wait()
	}()
	select {
	case line := <-ready:
		if _, err := fmt.Sscanf(line, "ready app=%s pprof=%s", &p.appURL, &p.pprofURL); err != nil {
			tb.Fatalf("unexpected ready line %q: %v", line, err)
		}
	case <-time.After(30 * time.Second):
		tb.Fatalf("%s/%s: no ready line after 30s", caseName, variant)
	}
	return p
}

// stop sends SIGTERM to the child's PID, and SIGKILL if it lingers.
func (p *variantProc) stop() {
	if p.cmd.Process == nil {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case p.exitErr = <-p.waitErr:
	case <-time.After(5 * time.Second):
		_ = p.cmd.Process.Kill()
		p.exitErr = <-p.waitErr
	}
	p.cmd.Process = nil
}

// drive sends n requests (or runs for d when n is 0) at the given concurrency.
func drive(tb testing.TB, ctx context.Context, url string, concurrency int, n int64, d time.Duration) *load.Result {
	tb.Helper()
	res, err := load.Run(ctx, load.Config{URL: url, Concurrency: concurrency, MaxRequests: n, Duration: d, Timeout: 10 * time.Second})
	if err != nil {
		tb.Fatal(err)
	}
	if res.Errors > 0 {
		tb.Fatalf("load errors: %s", res)
	}
	return res
}
