package b1churn

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestHandler(t *testing.T) {
	for _, v := range []string{Bad, Fixed} {
		h, err := NewHandler(v)
		if err != nil {
			t.Fatal(err)
		}
		const reqs = 20
		for range reqs {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
			if rec.Code != http.StatusOK || !strings.HasPrefix(rec.Body.String(), "ok score=") {
				t.Fatalf("%s: %d %q", v, rec.Code, rec.Body.String())
			}
		}
		if err := h.Close(); err != nil { // drains the writers and goroutines
			t.Fatal(err)
		}
		if got := h.Recorded(); got != reqs*Keys {
			t.Errorf("%s: store applied %d increments, want %d", v, got, reqs*Keys)
		}
	}
}

func TestInvalidVariant(t *testing.T) {
	if _, err := NewHandler("worse"); err == nil {
		t.Error("accepted an unknown variant")
	}
}

func BenchmarkRender(b *testing.B) {
	var seq uint64
	for b.Loop() {
		seq++
		render(seq)
	}
}
