package r6tinyheap

import (
	"net/http/httptest"
	"strings"
	"testing"
)

func TestHandler(t *testing.T) {
	h, err := NewHandler(Fixed)
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
	if lines := strings.Count(rec.Body.String(), "\n"); rec.Code != 200 || lines != Rows+1 {
		t.Errorf("%d, %d lines, want %d", rec.Code, lines, Rows+1)
	}
	if n := rec.Body.Len(); n < 20<<10 || n > 64<<10 {
		t.Errorf("export of %d bytes, want 20-64 KB", n)
	}
	if _, err := NewHandler("worse"); err == nil {
		t.Error("unknown variant accepted")
	}
}

func BenchmarkServe(b *testing.B) {
	h, _ := NewHandler(Bad)
	b.ReportAllocs()
	for range b.N {
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/", nil))
	}
}
