package verify

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/perfdoctor/perfdoctor/collect/jvm"
	"github.com/perfdoctor/perfdoctor/internal/progress"
	"github.com/perfdoctor/perfdoctor/load"
)

// Process IDs above Linux's largest (2^22): no /proc entry, so verify's CPU
// readings find nothing and only the fakes below say what they are.
const (
	fakeJVM   = 1<<22 + 1
	fakeOther = 1<<22 + 2
)

// fakeSettle makes fakeJVM the one JVM, and its wait for the JIT a call
// that returns got after holding for a moment; calls counts the waits and
// served the before side's requests during them.
func fakeSettle(t *testing.T, got jvm.Settle, err error) (calls *[]int, served *atomic.Int64, srv [2]*httptest.Server) {
	t.Helper()
	calls, served = &[]int{}, &atomic.Int64{}
	var during atomic.Bool
	for i := range srv {
		srv[i] = httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
			if i == 0 && during.Load() {
				served.Add(1)
			}
		}))
		t.Cleanup(srv[i].Close)
	}
	oldIs, oldWait := isJVM, waitSettle
	t.Cleanup(func() { isJVM, waitSettle = oldIs, oldWait })
	isJVM = func(pid int) bool { return pid == fakeJVM }
	waitSettle = func(ctx context.Context, procRoot string, pid int, max time.Duration, _ *progress.Line) (jvm.Settle, error) {
		*calls = append(*calls, pid)
		during.Store(true)
		defer during.Store(false)
		select {
		case <-ctx.Done():
		case <-time.After(300 * time.Millisecond):
		}
		return got, err
	}
	return calls, served, srv
}

// The JVM side is loaded while its JIT settles, once, before the rounds;
// the other side is not waited for; the wait goes into the result.
func TestSettleJVMSideOnly(t *testing.T) {
	calls, served, srv := fakeSettle(t, jvm.Settle{Waited: 34 * time.Second, Settled: true, Cores: 0.01}, nil)
	cfg := func(s *httptest.Server) load.Config {
		return load.Config{URL: s.URL + "/", Concurrency: 2, Duration: 100 * time.Millisecond}
	}
	for _, c := range []struct {
		pids [2]int
		side string
	}{{[2]int{fakeJVM, fakeOther}, "before"}, {[2]int{fakeOther, fakeJVM}, "after"}} {
		*calls = nil
		v, err := Run(context.Background(), Options{Before: cfg(srv[0]), After: cfg(srv[1]), PIDs: c.pids, Rounds: 2, Settle: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		if len(*calls) != 1 || (*calls)[0] != fakeJVM {
			t.Errorf("%s JVM: waits for %v, want one for %d", c.side, *calls, fakeJVM)
		}
		want := []JITSettle{{Side: c.side, PID: fakeJVM, Seconds: 34, Settled: true, CompilerCores: 0.01}}
		if len(v.JITSettle) != 1 || v.JITSettle[0] != want[0] {
			t.Errorf("%s JVM: jit_settle %+v, want %+v", c.side, v.JITSettle, want)
		}
		if len(v.Rounds) != 2 || len(jitWarnings(v)) != 0 {
			t.Errorf("%s JVM: %d rounds, warnings %q", c.side, len(v.Rounds), v.Warnings)
		}
	}
	// The before side (the JVM in the first case) had its load during its wait.
	if served.Load() == 0 {
		t.Error("no request reached the JVM side while its JIT settled")
	}
}

// No wait when it is turned off, when no side is a JVM, or when each
// measurement starts its own process (perfdoctor try).
func TestSettleNotWaited(t *testing.T) {
	calls, _, srv := fakeSettle(t, jvm.Settle{Settled: true}, nil)
	cfg := load.Config{URL: srv[0].URL + "/", Concurrency: 1, Duration: 50 * time.Millisecond}
	start := func(context.Context, int) (int, func(), error) { return fakeJVM, func() {}, nil }
	for name, o := range map[string]Options{
		"0":          {PIDs: [2]int{fakeJVM, fakeJVM}},
		"no JVM":     {PIDs: [2]int{fakeOther, 0}, Settle: time.Minute},
		"with Start": {Start: start, Settle: time.Minute},
	} {
		o.Before, o.After, o.Rounds = cfg, cfg, 2
		v, err := Run(context.Background(), o)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(*calls) != 0 || v.JITSettle != nil {
			t.Errorf("%s: waits %v, jit_settle %+v", name, *calls, v.JITSettle)
		}
	}
	if _, err := Run(context.Background(), Options{Before: cfg, After: cfg, Rounds: 2, Settle: jvm.MaxSettle + time.Second}); err == nil {
		t.Error("a settle bound over jvm.MaxSettle was taken")
	}
}

// A JIT still compiling at the bound, and compiler threads that cannot be
// read, are warnings: the rounds go on.
func TestSettleWarnings(t *testing.T) {
	for _, c := range []struct {
		got  jvm.Settle
		err  error
		want string
		n    int
	}{
		{jvm.Settle{Waited: time.Minute, Cores: 0.31}, nil, "still used 0.31 of a core after 1m0s", 1},
		{jvm.Settle{}, errors.New("reading the JIT compiler threads' CPU: gone"), "was not waited for: reading", 0},
	} {
		_, _, srv := fakeSettle(t, c.got, c.err)
		cfg := func(s *httptest.Server) load.Config {
			return load.Config{URL: s.URL + "/", Concurrency: 1, Duration: 50 * time.Millisecond}
		}
		v, err := Run(context.Background(), Options{Before: cfg(srv[0]), After: cfg(srv[1]), PIDs: [2]int{fakeJVM, 0}, Rounds: 2, Settle: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		if w := jitWarnings(v); len(w) != 1 || !strings.Contains(w[0], c.want) || len(v.JITSettle) != c.n || len(v.Rounds) != 2 {
			t.Errorf("warnings %q, jit_settle %+v, %d rounds; want %q", v.Warnings, v.JITSettle, len(v.Rounds), c.want)
		}
	}
}

// A side that fails its load while its JIT would settle fails verify at
// once, not after the bound.
func TestSettleLoadFails(t *testing.T) {
	_, _, srv := fakeSettle(t, jvm.Settle{Settled: true}, nil)
	waitSettle = func(ctx context.Context, _ string, _ int, _ time.Duration, _ *progress.Line) (jvm.Settle, error) {
		<-ctx.Done()
		return jvm.Settle{}, ctx.Err()
	}
	down := srv[0].URL + "/"
	srv[0].Close()
	t0 := time.Now()
	_, err := Run(context.Background(), Options{Before: load.Config{URL: down, Concurrency: 1, Duration: time.Second},
		After: load.Config{URL: srv[1].URL + "/", Concurrency: 1, Duration: time.Second}, PIDs: [2]int{fakeJVM, 0}, Rounds: 2, Settle: time.Minute})
	if err == nil || !strings.Contains(err.Error(), "before: loading it while its JIT settles") {
		t.Errorf("err %v", err)
	}
	if took := time.Since(t0); took > 10*time.Second {
		t.Errorf("took %s", took)
	}
}

// jitWarnings are v's warnings about the JIT, not the load generator's.
func jitWarnings(v *Result) []string {
	var out []string
	for _, w := range v.Warnings {
		if strings.Contains(w, "JIT") {
			out = append(out, w)
		}
	}
	return out
}
