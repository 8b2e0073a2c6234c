package servers

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/perfdoctor/perfdoctor/casebook/internal/harness"
)

// TestCaddy: Debian's caddy, a program the user runs but does not write.
// With `encode gzip` in front of a static page, compression is its cost and
// the prescription is caddy's configuration (precompressed files), never a
// code example. As a reverse proxy, waiting for its backend is its job:
// downstream-wait may say so at info level, never rank as a problem.
func TestCaddy(t *testing.T) {
	harness.Need(t, "caddy", "caddy")
	site := t.TempDir()
	words := strings.Fields("alpha beta gamma delta latency throughput server request caddy cache")
	var page strings.Builder
	for i := range 40000 {
		page.WriteString(words[(i*7+i/3)%len(words)] + " ")
	}
	if err := os.WriteFile(filepath.Join(site, "index.html"), []byte(page.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	admin, gz, plain, proxy := freePort(t), freePort(t), freePort(t), freePort(t)
	config := fmt.Sprintf(`{
	admin 127.0.0.1:%d
	auto_https off
	storage file_system %s
}
http://127.0.0.1:%d {
	root * %s
	encode gzip
	file_server
}
http://127.0.0.1:%d {
	root * %s
	file_server
}
http://127.0.0.1:%d {
	reverse_proxy 127.0.0.1:%d
}
`, admin, t.TempDir(), gz, site, plain, site, proxy, plain)
	caddyfile := filepath.Join(t.TempDir(), "Caddyfile")
	if err := os.WriteFile(caddyfile, []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("caddy", "run", "--config", caddyfile, "--adapter", "caddyfile")
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir(), "XDG_DATA_HOME="+t.TempDir(), "XDG_CONFIG_HOME="+t.TempDir())
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	adminURL := fmt.Sprintf("http://127.0.0.1:%d", admin)
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		res, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/index.html", proxy))
		last := fmt.Sprint(err)
		if err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				break
			}
			last = res.Status
		}
		if time.Now().After(deadline) {
			t.Fatalf("caddy did not serve through its proxy on port %d (upstream %d) within 15 s: last answer %s", proxy, plain, last)
		}
	}
	run := func(t *testing.T, port int, header ...string) harness.Report {
		dir := filepath.Join(t.TempDir(), "run")
		args := []string{"run", "--target", adminURL, "--load", fmt.Sprintf("http://127.0.0.1:%d/index.html", port),
			"-c", "8", "-d", "5s", "--warmup", "1s", "-o", dir}
		for _, h := range header {
			args = append(args, "-H", h)
		}
		if out, err := exec.Command(bin.perfdoctor, args...).CombinedOutput(); err != nil {
			t.Fatalf("perfdoctor run: %v\n%s", err, out)
		}
		return harness.Diagnose(t, bin.perfdoctor, filepath.Join(dir, "bundle"))
	}

	t.Run("gzip", func(t *testing.T) {
		findings := run(t, gz, "Accept-Encoding: gzip").Findings
		if len(findings) == 0 || findings[0].Class != "compression-level" {
			t.Fatalf("caddy's gzip is not the first finding: %+v", findings)
		}
		f := findings[0]
		if !strings.Contains(f.Fix, "not yours to edit") || !strings.Contains(f.Fix, "precompressed") {
			t.Errorf("caddy's compression prescribed as a code change: %s", f.Fix)
		}
	})
	t.Run("reverse proxy", func(t *testing.T) {
		for _, f := range run(t, proxy).Findings {
			if f.Class == "downstream-wait" && f.Severity != "info" {
				t.Errorf("a proxy waiting for its backend graded %s: %s", f.Severity, f.Summary)
			}
			if f.Severity == "high" {
				t.Errorf("high finding on a proxy under light load: %s %s", f.Class, f.Summary)
			}
		}
	})
}
