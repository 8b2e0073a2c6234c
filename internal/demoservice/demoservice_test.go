package demoservice

import (
	"context"
	"io"
	"net/http"
	"runtime"
	"strings"
	"testing"

	"github.com/perfdoctor/perfdoctor/facts"
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

// The demo shows GC pressure from allocation (GC001), which a heap of a
// million or more live objects would turn into GC002's scan-bound heap on
// a machine slow enough to run few cycles a second: the index stays under
// half of GC002's line, counted exactly by the runtime's statistics.
func TestIndexStaysUnderScanBoundHeap(t *testing.T) {
	saved := index
	defer func() { index = saved }()
	before := liveObjects()
	buildIndex()
	if n := liveObjects() - before; n < products || n > facts.MinLiveObjects/2 {
		t.Errorf("the index holds %d live objects, want between %d and %d", n, products, facts.MinLiveObjects/2)
	}
}

func liveObjects() int64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapObjects)
}
