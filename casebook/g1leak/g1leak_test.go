package g1leak

import (
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"
)

// serve runs n requests and returns how many goroutines outlived them.
func serve(t *testing.T, variant string, n int) int {
	t.Helper()
	h, err := NewHandler(variant)
	if err != nil {
		t.Fatal(err)
	}
	before := runtime.NumGoroutine()
	for range n {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
		if rec.Code != http.StatusOK || !strings.HasPrefix(rec.Body.String(), "price=") {
			t.Fatalf("%s: %d %q", variant, rec.Code, rec.Body.String())
		}
	}
	// Late quotes arrive within slowQuote; give them ample time to exit.
	deadline := time.Now().Add(2 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	return runtime.NumGoroutine() - before
}

func TestBadLeaksFixedDoesNot(t *testing.T) {
	if left := serve(t, Fixed, 40); left > 0 {
		t.Errorf("fixed: %d goroutines left behind", left)
	}
	// Every slow request leaks in the bad variant: 40/SlowEvery of them.
	if left := serve(t, Bad, 40); left < 40/SlowEvery {
		t.Errorf("bad: %d goroutines left behind, want at least %d", left, 40/SlowEvery)
	}
}

func TestInvalidVariant(t *testing.T) {
	if _, err := NewHandler("worse"); err == nil {
		t.Error("accepted an unknown variant")
	}
}
