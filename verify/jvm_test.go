package verify

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"
	"time"

	"github.com/perfdoctor/perfdoctor/collect/jvm"
	"github.com/perfdoctor/perfdoctor/internal/jvmtest"
	"github.com/perfdoctor/perfdoctor/load"
)

func TestMain(m *testing.M) {
	code := m.Run()
	jvmtest.Cleanup()
	os.Exit(code)
}

// TestSettleLiveJVM compares a fresh JVM serving HTTP (testdata/Serve.java)
// with a Go server (this test process): verify finds the JVM by its
// listener, loads it until its JIT compiler threads go quiet before the
// first round, at least the 3 s over which their CPU is averaged, and
// does not wait for the Go side.
func TestSettleLiveJVM(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a JVM and loads it for tens of seconds")
	}
	port := freePort(t)
	pid := jvmtest.Start(t, "testdata/Serve.java", "Serve", port)
	jvmURL := "http://127.0.0.1:" + port + "/"
	waitListening(t, "127.0.0.1:"+port)
	goSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("ok")) }))
	defer goSrv.Close()
	goURL := goSrv.URL + "/"
	if got := LocalPID(jvmURL); got != pid {
		t.Fatalf("LocalPID(JVM) = %d, want %d", got, pid)
	}
	cfg := func(u string) load.Config { return load.Config{URL: u, Concurrency: 8, Duration: time.Second} }
	t0 := time.Now()
	v, err := Run(context.Background(), Options{Before: cfg(goURL), After: cfg(jvmURL),
		PIDs: [2]int{LocalPID(goURL), LocalPID(jvmURL)}, Rounds: 2, Warmup: 200 * time.Millisecond, Settle: jvm.DefaultSettle})
	if err != nil {
		t.Fatal(err)
	}
	if v.Rounds[0].Before == nil || os.Getpid() != LocalPID(goURL) {
		t.Fatalf("the Go side is not this process")
	}
	if len(v.JITSettle) != 1 {
		t.Fatalf("jit_settle %+v, want the after (JVM) side's alone", v.JITSettle)
	}
	s := v.JITSettle[0]
	t.Logf("JVM side settled %v after %.1f s (compiler %.3f cores); verify took %s", s.Settled, s.Seconds, s.CompilerCores, time.Since(t0).Round(time.Second))
	if s.Side != "after" || s.PID != pid || s.Seconds < 3 || !s.Settled {
		t.Errorf("jit_settle %+v: want the after side, pid %d, settled after 3 s or more", s, pid)
	}
	if len(v.Rounds) != 2 {
		t.Errorf("%d rounds", len(v.Rounds))
	}
}

// waitListening waits up to 30 s for addr to accept connections.
func waitListening(t *testing.T, addr string) {
	t.Helper()
	for range 300 {
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			c.Close()
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("%s did not accept connections", addr)
}
