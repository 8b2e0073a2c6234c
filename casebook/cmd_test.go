package casebook

import (
	"io"
	"net/http"
	"testing"
	"time"
)

// TestBinary checks the casebook command's contract: one ready line, the app
// and pprof listeners, and a clean stop on SIGTERM.
func TestBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the casebook binary")
	}
	p := startVariant(t, "d2", "fixed")
	c := &http.Client{Timeout: 5 * time.Second}
	for _, url := range []string{p.appURL + "/", p.pprofURL + "/debug/pprof/cmdline"} {
		resp, err := c.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("GET %s: %d", url, resp.StatusCode)
		}
	}
	p.stop()
	if err := p.exitErr; err != nil {
		t.Errorf("casebook exited with %v after SIGTERM", err)
	}
}
