package d1gc

import (
	"net/http"
	"net/http/httptest"
	"runtime/debug"
	"strings"
	"testing"
)

func TestHandler(t *testing.T) {
	for _, v := range []string{Bad, Fixed} {
		h, err := Handler(v)
		if err != nil {
			t.Fatal(err)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
		if rec.Code != http.StatusOK || !strings.HasPrefix(rec.Body.String(), "items=400 ") {
			t.Errorf("%s: %d %q", v, rec.Code, rec.Body.String())
		}
	}
}

func TestInvalidVariant(t *testing.T) {
	if _, err := Handler("worse"); err == nil {
		t.Error("Handler accepted an unknown variant")
	}
	if err := Tune("worse"); err == nil {
		t.Error("Tune accepted an unknown variant")
	}
}

func TestTune(t *testing.T) {
	// Restore the test process's GC settings afterwards.
	oldPct := debug.SetGCPercent(100)
	oldLimit := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetGCPercent(oldPct); debug.SetMemoryLimit(oldLimit) })

	if err := Tune(Bad); err != nil {
		t.Fatal(err)
	}
	if pct := debug.SetGCPercent(100); pct != 100 {
		t.Errorf("bad changed GOGC to %d", pct)
	}
	if err := Tune(Fixed); err != nil {
		t.Fatal(err)
	}
	if pct := debug.SetGCPercent(100); pct != -1 {
		t.Errorf("fixed: GOGC %d, want off", pct)
	}
	if lim := debug.SetMemoryLimit(-1); lim != MemoryLimit {
		t.Errorf("fixed: memory limit %d, want %d", lim, MemoryLimit)
	}
}
