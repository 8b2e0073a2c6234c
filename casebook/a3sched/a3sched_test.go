package a3sched

import (
	"net/http"
	"net/http/httptest"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
)

func TestHandler(t *testing.T) {
	for _, v := range []string{Bad, Fixed} {
		restore, err := Setup(v, false) // runtime calls, no re-exec
		if err != nil {
			t.Fatal(err)
		}
		h, err := NewHandler(v)
		if err != nil {
			t.Fatal(err)
		}
		for range 10 {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
			if rec.Code != http.StatusOK || !strings.HasPrefix(rec.Body.String(), "items=") {
				t.Fatalf("%s: %d %q", v, rec.Code, rec.Body.String())
			}
		}
		h.Close()
		restore()
	}
}

func TestSetupInTest(t *testing.T) {
	procs, gc := runtime.GOMAXPROCS(0), debug.SetGCPercent(-1)
	debug.SetGCPercent(gc)
	restore, err := Setup(Bad, false)
	if err != nil {
		t.Fatal(err)
	}
	if got := runtime.GOMAXPROCS(0); got != BadProcs {
		t.Errorf("bad: GOMAXPROCS %d, want %d", got, BadProcs)
	}
	if got := debug.SetGCPercent(GOGC); got != GOGC {
		t.Errorf("bad: GOGC %d, want %d", got, GOGC)
	}
	restore()
	if runtime.GOMAXPROCS(0) != procs {
		t.Error("restore did not reset GOMAXPROCS")
	}
}

func TestEnv(t *testing.T) {
	bad, _ := Env(Bad)
	fixed, _ := Env(Fixed)
	if bad["GOMAXPROCS"] == "" || fixed["GOMAXPROCS"] != "" || bad["GOGC"] != fixed["GOGC"] {
		t.Errorf("bad %v, fixed %v", bad, fixed)
	}
}

func TestBadKeepsAGOMAXPROCSSetInTheEnvironment(t *testing.T) {
	t.Setenv("GOMAXPROCS", "1")
	bad, _ := Env(Bad)
	fixed, _ := Env(Fixed)
	if bad["GOMAXPROCS"] != "1" || fixed["GOMAXPROCS"] != "" {
		t.Errorf("GOMAXPROCS=1 set: bad %v, fixed %v", bad, fixed)
	}
}

func TestInvalidVariant(t *testing.T) {
	if _, err := NewHandler("worse"); err == nil {
		t.Error("NewHandler accepted an unknown variant")
	}
	if _, err := Setup("worse", false); err == nil {
		t.Error("Setup accepted an unknown variant")
	}
	if _, err := Env("worse"); err == nil {
		t.Error("Env accepted an unknown variant")
	}
}
