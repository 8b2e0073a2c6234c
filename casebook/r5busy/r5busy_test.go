package r5busy

import (
	"net/http/httptest"
	"strings"
	"testing"
)

func TestDistance(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want int
	}{{"", "", 0}, {"kitten", "sitting", 3}, {"flaw", "lawn", 2}, {"abc", "abc", 0}, {"", "abcd", 4}} {
		if got := distance(tc.a, tc.b); got != tc.want {
			t.Errorf("distance(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
	}
}

func TestHandler(t *testing.T) {
	h, err := NewHandler(Bad)
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
	if rec.Code != 200 || !strings.HasPrefix(rec.Body.String(), "match=") {
		t.Errorf("%d %q", rec.Code, rec.Body)
	}
	if allocs := testing.AllocsPerRun(100, func() { h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/", nil)) }); allocs > 40 {
		t.Errorf("%.0f allocations per request: the control must stay light on the heap", allocs)
	}
	if _, err := NewHandler("worse"); err == nil {
		t.Error("unknown variant accepted")
	}
}

func BenchmarkServe(b *testing.B) {
	h, _ := NewHandler(Bad)
	for range b.N {
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/", nil))
	}
}
