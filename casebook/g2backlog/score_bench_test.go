package g2backlog

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

func BenchmarkServe(b *testing.B) {
	h, _ := NewHandler(Fixed)
	defer h.Close()
	req := httptest.NewRequest(http.MethodGet, "/", nil)
	for b.Loop() {
		h.ServeHTTP(httptest.NewRecorder(), req)
	}
}
