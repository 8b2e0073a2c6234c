package g2backlog

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// Both variants write every event they accept; the bad one accepts all
// and drains them late, the fixed one drops what its queue cannot hold.
func TestEventsDrain(t *testing.T) {
	for _, v := range []string{Bad, Fixed} {
		h, err := NewHandler(v)
		if err != nil {
			t.Fatal(err)
		}
		const n = 20 * AuditEvery
		for range n {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
			if rec.Code != http.StatusOK {
				t.Fatalf("%s: status %d", v, rec.Code)
			}
		}
		deadline := time.Now().Add(5 * time.Second)
		for h.Written.Load()+h.Dropped.Load() < n/AuditEvery && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if got := h.Written.Load() + h.Dropped.Load(); got != n/AuditEvery {
			t.Errorf("%s: %d events written or dropped, want %d", v, got, n/AuditEvery)
		}
		if v == Bad && h.Dropped.Load() != 0 {
			t.Errorf("bad variant dropped %d events", h.Dropped.Load())
		}
		h.Close()
	}
}

func TestInvalidVariant(t *testing.T) {
	if _, err := NewHandler("worse"); err == nil {
		t.Error("accepted an unknown variant")
	}
}
