package e2ports

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

func serve(t *testing.T, variant string, n int) *Handler {
	t.Helper()
	h, err := NewHandler(variant)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	for i := range n {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
		if rec.Code != http.StatusOK || rec.Body.String() != "pong\n" {
			t.Fatalf("request %d: %d %q", i, rec.Code, rec.Body.String())
		}
	}
	return h
}

func TestBadDialsPerRequest(t *testing.T) {
	h := serve(t, Bad, 200)
	if got := h.Accepted(); got != 200 {
		t.Errorf("backend accepted %d connections for 200 requests, want 200", got)
	}
}

func TestFixedReusesConnections(t *testing.T) {
	h := serve(t, Fixed, 200)
	if got := h.Accepted(); got != 1 {
		t.Errorf("backend accepted %d connections for 200 sequential requests, want 1", got)
	}
}

func TestBadStopsAtItsBudget(t *testing.T) {
	h := serve(t, Bad, 1)
	h.dials.Store(MaxDials)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
	if rec.Code != http.StatusServiceUnavailable {
		t.Errorf("past the budget: status %d, want 503", rec.Code)
	}
}

func TestUnknownVariant(t *testing.T) {
	if _, err := NewHandler("worse"); err == nil {
		t.Error("unknown variant accepted")
	}
}
