package native

import (
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/perfdoctor/perfdoctor/casebook/internal/harness"
	"github.com/perfdoctor/perfdoctor/load"
)

// nginxConf is a one-process nginx on loopback serving root with gzip;
// extra holds the variant's gzip settings.
const nginxConf = `daemon off;
master_process off;
worker_processes 1;
pid %[1]s/nginx.pid;
error_log %[1]s/error.log;
events { worker_connections 256; }
http {
	access_log off;
	client_body_temp_path %[1]s/tmp; proxy_temp_path %[1]s/tmp; fastcgi_temp_path %[1]s/tmp;
	uwsgi_temp_path %[1]s/tmp; scgi_temp_path %[1]s/tmp;
	default_type text/html;
	server {
		listen 127.0.0.1:%[2]d;
		root %[1]s/html;
		gzip on; gzip_min_length 1000;  # text/html is always compressed
		%[3]s
	}
}
`

// page writes a 600 KB HTML page of repeated words, as compressible as text.
func page(t *testing.T, path string) {
	t.Helper()
	words := []string{"alpha", "beta", "gamma", "delta", "request", "latency", "server", "client", "window", "buffer", "struct", "return"}
	r := rand.New(rand.NewPCG(1, 2))
	var b strings.Builder
	for b.Len() < 600<<10 {
		b.WriteString(`<p class="row">`)
		for range 12 {
			b.WriteString(words[r.IntN(len(words))] + " ")
		}
		fmt.Fprintf(&b, "%d</p>\n", r.IntN(100000))
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

// startNginx runs Debian's nginx with the variant's gzip settings and
// returns its PID and the page's URL; it is stopped with the test.
func startNginx(t *testing.T, gzip string, precompress bool) (int, string) {
	t.Helper()
	dir := t.TempDir()
	for _, d := range []string{"html", "tmp"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	page(t, filepath.Join(dir, "html", "page.html"))
	if precompress {
		// Written once, as at deploy time.
		if out, err := exec.Command("gzip", "-9", "-k", filepath.Join(dir, "html", "page.html")).CombinedOutput(); err != nil {
			t.Fatalf("gzip: %v\n%s", err, out)
		}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	conf := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(conf, []byte(fmt.Sprintf(nginxConf, dir, port, gzip)), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(nginxPath, "-c", conf, "-p", dir)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	url := fmt.Sprintf("http://127.0.0.1:%d/page.html", port)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if resp, err := http.Get(url); err == nil {
			resp.Body.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("nginx did not answer on %s", url)
		}
	}
	return cmd.Process.Pid, url
}

var nginxPath = "nginx"

// TestNginxGzip: nginx compressing every response at gzip_comp_level 9
// spends its CPU in libz (stripped: perf sees "[unknown] libz.so"); the top
// finding must be compression-level with nginx's prescription, and with
// the page precompressed once (gzip_static) it must be gone.
func TestNginxGzip(t *testing.T) {
	harness.Need(t, "linux-perf, nginx-light and gzip", "perf", "gzip")
	if p, err := exec.LookPath("nginx"); err == nil {
		nginxPath = p
	} else if _, err := os.Stat("/usr/sbin/nginx"); err == nil {
		nginxPath = "/usr/sbin/nginx"
	} else {
		harness.Need(t, "nginx-light", "nginx")
	}
	gzipped := http.Header{"Accept-Encoding": {"gzip"}}
	t.Run("bad", func(t *testing.T) {
		pid, url := startNginx(t, "gzip_comp_level 9;", false)
		rep := diagnoseWith(t, pid, load.Config{URL: url, Concurrency: 2, Header: gzipped})
		if rep.TooFewSamples("LIB004") && !harness.InCI() {
			t.Skip("the machine is too busy: perf saw too few of nginx's samples to judge")
		}
		findings := rep.Findings
		if len(findings) == 0 || findings[0].Class != "compression-level" || !strings.Contains(findings[0].Summary, "zlib") {
			t.Fatalf("top finding is not compression in zlib: %+v", findings)
		}
		if f := findings[0]; !strings.Contains(f.Fix, "gzip_static") || !strings.Contains(f.Fix, "gzip_comp_level") {
			t.Errorf("not nginx's prescription: %s", f.Fix)
		}
		for _, f := range findings {
			if f.Class == "hot-function" && strings.Contains(f.Summary, "unknown") {
				t.Errorf("an unsymbolized frame named as the hot function: %s", f.Summary)
			}
		}
	})
	t.Run("fixed", func(t *testing.T) {
		pid, url := startNginx(t, "gzip_static on; gzip_comp_level 1;", true)
		for _, f := range diagnoseWith(t, pid, load.Config{URL: url, Concurrency: 2, Header: gzipped}).Findings {
			if f.Class == "compression-level" {
				t.Errorf("compression still reported with precompressed content: %s", f.Summary)
			}
		}
	})
}
