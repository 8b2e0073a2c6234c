package r4fanout

import (
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
)

func TestHandler(t *testing.T) {
	for _, v := range []string{Bad, Fixed} {
		restore, err := Setup(v, false) // runtime calls, no re-exec
		if err != nil {
			t.Fatal(err)
		}
		if want := map[string]int{Bad: BadProcs, Fixed: runtime.NumCPU()}[v]; runtime.GOMAXPROCS(0) != want {
			t.Errorf("%s: GOMAXPROCS %d, want %d", v, runtime.GOMAXPROCS(0), want)
		}
		h, err := NewHandler(v)
		if err != nil {
			t.Fatal(err)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
		if rec.Code != 200 || !strings.HasPrefix(rec.Body.String(), "price=") {
			t.Errorf("%s: %d %q", v, rec.Code, rec.Body)
		}
		restore()
	}
	bad, _ := Env(Bad)
	fixed, _ := Env(Fixed)
	if fixed["GOMAXPROCS"] != "" || bad["GOMAXPROCS"] != "64" || bad["GOGC"] != fixed["GOGC"] {
		t.Errorf("bad %v, fixed %v", bad, fixed)
	}
	if _, err := Setup("worse", false); err == nil {
		t.Error("unknown variant accepted")
	}
}

func BenchmarkLowest(b *testing.B) {
	h, _ := NewHandler(Bad)
	for i := range b.N {
		lowest(h.shards[0], uint64(i))
	}
}
