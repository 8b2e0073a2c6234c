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
	if n := rec.Body.Len(); n < 16<<10 || n > header+Rows*rowBytes {
		t.Errorf("export of %d bytes, want 16 KB up to the %d bytes sized for", n, header+Rows*rowBytes)
	}
	if allocs := testing.AllocsPerRun(50, func() { h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/", nil)) }); allocs > 30 {
		t.Errorf("%.0f allocations per request, want one buffer and the recorder's few", allocs)
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
