package g1leak

import (
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"
)

// serve runs n requests and returns how many goroutines outlived them and
// how many requests missed the budget (answered with the list price).
func serve(t *testing.T, variant string, n int) (left, missed int) {
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
		if strings.HasSuffix(rec.Body.String(), " list\n") {
			missed++
		}
	}
	// Late quotes arrive within slowQuote; give them ample time to exit.
	deadline := time.Now().Add(2 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	return runtime.NumGoroutine() - before, missed
}

// In the bad variant every request that missed its budget leaves its quote
// goroutine behind: the slow ones, and on a busy machine fast ones whose
// timer fired first too, or fewer when a late timer lets a slow quote win.
func TestBadLeaksFixedDoesNot(t *testing.T) {
	if left, _ := serve(t, Fixed, 40); left > 0 {
		t.Errorf("fixed: %d goroutines left behind", left)
	}
	left, missed := serve(t, Bad, 40)
	if missed == 0 || left != missed {
		t.Errorf("bad: %d goroutines left behind by %d requests that missed the budget, want one each", left, missed)
	}
}

func TestInvalidVariant(t *testing.T) {
	if _, err := NewHandler("worse"); err == nil {
		t.Error("accepted an unknown variant")
	}
}
