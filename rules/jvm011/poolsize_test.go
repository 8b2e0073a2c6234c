package jvm011

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/perfdoctor/perfdoctor/evidence"
	"github.com/perfdoctor/perfdoctor/facts"
	"github.com/perfdoctor/perfdoctor/rules"
	"github.com/perfdoctor/perfdoctor/rules/jvmthreads/jvmthreadstest"
)

// Two threads for sixteen callers' 25 ms blocking tasks: too small.
func TestFiresOnSmallPool(t *testing.T) {
	res := jvmthreadstest.Run(t, "smallpool", Rule)
	if len(res.Findings) != 1 {
		t.Fatalf("got %+v", res)
	}
	f := res.Findings[0]
	if f.Severity != rules.High || !strings.Contains(f.Summary, "pool-1-thread (an executor made by java.util.concurrent.Executors) has 2 threads") || f.Impact < 0.5 {
		t.Errorf("summary %q at %s, impact %.2f", f.Summary, f.Severity, f.Impact)
	}
	if len(f.Locations) == 0 || f.Locations[0].Function != "perfdoctor.fixtures.ThreadWork.sleep" || !strings.Contains(f.Summary, "they wait in ThreadWork.sleep") {
		t.Errorf("locations %+v", f.Locations)
	}
}

// 400 threads running CPU-bound tasks on 2 CPUs: too large.
func TestFiresOnLargePool(t *testing.T) {
	res := jvmthreadstest.Run(t, "largepool", Rule)
	if len(res.Findings) != 1 {
		t.Fatalf("got %+v", res)
	}
	if f := res.Findings[0]; !strings.Contains(f.Summary, "threads on 2 CPUs") || f.Evidence[0].Num < 300 {
		t.Errorf("summary %q", f.Summary)
	}
}

// 24 threads for the same tasks, 64 threads whose 5 ms waits go
// unrecorded (on a saturated host), and pools of other shapes: silent.
func TestSilentOnRightSizedPools(t *testing.T) {
	for _, mode := range []string{"rightpool", "sleepers", "balanced", "unbalanced", "locks", "pinned"} {
		if res := jvmthreadstest.Run(t, mode, Rule); len(res.Findings) != 0 {
			t.Errorf("%s: %+v", mode, res.Findings)
		}
	}
}

// loadServer reads a fixture of testdata/servers (record.sh there): an
// HTTP server whose requests each wait ~20 ms on a downstream process,
// under 32 connections.
func loadServer(t *testing.T, name string) rules.Result {
	t.Helper()
	ev, err := evidence.Load(context.Background(), evidence.LoadOptions{}, filepath.Join("testdata", "servers", name+".jfr.gz"))
	if err != nil {
		t.Fatal(err)
	}
	return rules.Run(facts.New(ev), []*rules.Rule{Rule})
}

// Any executor, known by how its threads wait rather than by its class:
// Jetty's QueuedThreadPool of 6 threads, Netty's two event loops blocked
// in channelRead, a ThreadPoolExecutor of 2 behind the JDK's HttpServer,
// and a hand-made pool of 2 threads taking from a LinkedBlockingQueue.
func TestFiresOnAnyExecutor(t *testing.T) {
	for _, tc := range []struct {
		fixture, pool, site string
		words               []string
	}{
		{"jetty-small", "qtp", "Servers.callBackend", []string{"Jetty's QueuedThreadPool", "maxThreads"}},
		{"netty-block", "nioEventLoopGroup-3", "Servers.callBackend", []string{"Event loop", "Never block the event loop"}},
		{"tpe-small", "pool-1-thread", "Servers.callBackend", []string{"has 2 threads", "newFixedThreadPool"}},
		{"handmade-small", "worker", "Servers.callBackendParked", []string{"has 2 threads", "the pool's thread count"}},
	} {
		t.Run(tc.fixture, func(t *testing.T) {
			res := loadServer(t, tc.fixture)
			if len(res.Findings) != 1 {
				t.Fatalf("want one finding, got %+v", res.Findings)
			}
			f := res.Findings[0]
			text := f.Summary + "\n" + f.Fix
			for _, w := range append(tc.words, tc.pool, "they wait in "+tc.site) {
				if !strings.Contains(text, w) {
					t.Errorf("%q missing from\n%s", w, text)
				}
			}
			if len(f.Locations) == 0 || !strings.HasSuffix(f.Locations[0].Function, tc.site) {
				t.Errorf("locations %+v", f.Locations)
			}
			if f.Impact < 0.5 {
				t.Errorf("impact %.2f", f.Impact)
			}
			t.Logf("%s: %s", f.Severity, f.Summary)
		})
	}
}

// The same servers with threads enough for the requests in flight (Jetty's
// default 200, pools of 64, Netty handing the call to a pool of 64) and a
// pool of 2 whose threads compute: silent.
func TestSilentOnExecutorsWithThreadsEnough(t *testing.T) {
	for _, fixture := range []string{"jetty-right", "netty-offload", "tpe-right", "handmade-right", "cpu"} {
		t.Run(fixture, func(t *testing.T) {
			if res := loadServer(t, fixture); len(res.Findings) != 0 {
				t.Errorf("%s", res.Findings[0].Summary)
			}
		})
	}
}
