package jfr

import (
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The thread events (pinning, lock parks, pools, context switches, CPU
// load) read natively agree with the JDK's own reader on recordings of the
// JVM thread rules' fixtures (rules/testdata/jfr, JDK 25).
func TestThreadEventsMatchJDKReader(t *testing.T) {
	tool := needTool(t)
	for _, mode := range []string{"pinned", "locks", "smallpool"} {
		t.Run(mode, func(t *testing.T) { matchJDKReader(t, tool, gunzipFixture(t, threadFixture(mode))) })
	}
}

// threadFixture is the path of a JVM thread rules' fixture.
func threadFixture(mode string) string {
	return filepath.Join("..", "..", "rules", "testdata", "jfr", mode+".jfr.gz")
}

func gunzipFixture(t testing.TB, path string) string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	z, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), strings.TrimSuffix(filepath.Base(path), ".gz"))
	w, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(w, z); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return out
}

// What the thread summary holds for the fixtures' workloads.
func TestThreadSummary(t *testing.T) {
	read := func(mode string) Threading {
		rec, err := ReadFile(gunzipFixture(t, threadFixture(mode)))
		if err != nil {
			t.Fatal(err)
		}
		return rec.JVM.Threading
	}
	pinned := read("pinned")
	if len(pinned.Pinned) == 0 || pinned.Pinned[0].Reason != "Native or VM frame on stack" || pinned.Pinned[0].Kind != "LockSupport.park" {
		t.Errorf("pinned: %+v", pinned.Pinned)
	}
	classes := map[string]string{}
	for _, w := range read("locks").LockWaits {
		classes[w.Class] = w.Kind
	}
	if classes["java.lang.Object"] != "monitor" || classes["java.util.concurrent.locks.ReentrantLock$NonfairSync"] != "lock" {
		t.Errorf("lock waits by class: %v", classes)
	}
	small := read("smallpool")
	var pool *Pool
	for i := range small.Pools {
		if small.Pools[i].Name == "pool-1-thread" {
			pool = &small.Pools[i]
		}
	}
	if pool == nil || pool.Threads != 2 || !pool.Executor || pool.Blocked <= 0 || pool.Window <= 0 {
		t.Errorf("small pool: %+v", small.Pools)
	}
	if small.ContextSwitchSamples == 0 || len(small.CPULoad) < 3 || small.LiveMax == 0 {
		t.Errorf("rates: %+v", small)
	}
}

func TestPoolName(t *testing.T) {
	for thread, want := range map[string]string{
		"pool-1-thread-3": "pool-1-thread", "worker-7": "worker", "http-nio-8080-exec-10": "http-nio-8080-exec",
		"ForkJoinPool-1-worker-2": "ForkJoinPool-1-worker", "C2 CompilerThread0": "", "main": "", "42": "",
	} {
		got, ok := PoolName(thread)
		if got != want || ok != (want != "") {
			t.Errorf("PoolName(%q) = %q, %v; want %q", thread, got, ok, want)
		}
	}
}
