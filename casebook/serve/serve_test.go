package serve

import (
	"context"
	"io"
	"net"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"
)

func get(t *testing.T, url string) string {
	t.Helper()
	c := &http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %s", url, resp.StatusCode, b)
	}
	return string(b)
}

func TestStart(t *testing.T) {
	// d1 "fixed" would change this test process's GC settings; bad is enough.
	for _, tc := range [][2]string{{"d1", "bad"}, {"d2", "fixed"}} {
		svc, err := Start(context.Background(), tc[0], tc[1], "", "")
		if err != nil {
			t.Fatal(err)
		}
		if !regexp.MustCompile(`^ready app=http://127\.0\.0\.1:\d+ pprof=http://127\.0\.0\.1:\d+$`).MatchString(svc.ReadyLine()) {
			t.Errorf("ready line %q", svc.ReadyLine())
		}
		get(t, svc.AppURL+"/")
		if idx := get(t, svc.PprofURL+"/debug/pprof/"); !strings.Contains(idx, "goroutine") {
			t.Errorf("pprof index lacks profiles: %.200s", idx)
		}
		get(t, svc.PprofURL+"/debug/pprof/heap")
		if err := svc.Close(); err != nil {
			t.Error(err)
		}
		if err := svc.Wait(); err != nil {
			t.Error(err)
		}
		if _, err := http.Get(svc.AppURL + "/"); err == nil {
			t.Error("app still serving after Close")
		}
	}
}

func TestStartStopsOnCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	svc, err := Start(ctx, "d2", "bad", "127.0.0.1:0", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	select {
	case <-svc.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("service did not stop on context cancel")
	}
}

func TestStartErrors(t *testing.T) {
	for _, tc := range [][4]string{
		{"d9", "bad", "", ""},
		{"d1", "worse", "", ""},
		{"d2", "worse", "", ""},
		{"d2", "bad", "256.0.0.1:0", ""},
		{"d2", "bad", "", "not-an-addr"},
	} {
		if svc, err := Start(context.Background(), tc[0], tc[1], tc[2], tc[3]); err == nil {
			svc.Close()
			t.Errorf("Start%q succeeded", tc)
		}
	}
}

// A case whose handler serves UDP (R2) names its ingress on the ready line,
// and answers datagrams there.
func TestStartUDPIngress(t *testing.T) {
	svc, err := Start(context.Background(), "r2", "fixed", "", "")
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	if !regexp.MustCompile(`^ready app=http://127\.0\.0\.1:\d+ pprof=http://127\.0\.0\.1:\d+ udp=127\.0\.0\.1:\d+$`).MatchString(svc.ReadyLine()) {
		t.Errorf("ready line %q", svc.ReadyLine())
	}
	c, err := net.Dial("udp", svc.UDPAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Write([]byte("\x00\x07 IN A example")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 512)
	n, err := c.Read(buf)
	if err != nil || !strings.HasPrefix(string(buf[:n]), "\x00\x07 IN A example") {
		t.Fatalf("answer %q, %v", buf[:n], err)
	}
	// The relay counts an answer once its write returns, which may be after
	// the client has read it.
	status := get(t, svc.AppURL+"/")
	for deadline := time.Now().Add(2 * time.Second); !strings.Contains(status, "relayed=1") && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
		status = get(t, svc.AppURL+"/")
	}
	if !strings.Contains(status, "relayed=1") {
		t.Errorf("status page %q", status)
	}
}
