package demoservice

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
)

func TestServesSearchAndPprof(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s, err := Start(ctx, "127.0.0.1:0", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, c := range []struct{ url, want string }{
		{s.AppURL + "/", "matches=400 suggestions=2400 best="},
		{s.PprofURL + "/debug/pprof/", "allocs"},
	} {
		resp, err := http.Get(c.url)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), c.want) {
			t.Errorf("GET %s: %d %q, want %q in it", c.url, resp.StatusCode, b, c.want)
		}
	}
}

func TestParseReady(t *testing.T) {
	app, pp, err := ParseReady("ready app=http://127.0.0.1:1 pprof=http://127.0.0.1:2")
	if err != nil || app != "http://127.0.0.1:1" || pp != "http://127.0.0.1:2" {
		t.Errorf("got %q %q %v", app, pp, err)
	}
	if _, _, err := ParseReady("panic: oops"); err == nil {
		t.Error("garbage accepted")
	}
}
