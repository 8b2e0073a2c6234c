package d3logging

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestHandler(t *testing.T) {
	const reqs = 2 * SampleEvery
	for v, wantLines := range map[string]int64{Bad: reqs * LinesPerRequest, Fixed: reqs / SampleEvery} {
		h, err := NewHandler(v)
		if err != nil {
			t.Fatal(err)
		}
		for range reqs {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
			if rec.Code != http.StatusOK || !strings.HasPrefix(rec.Body.String(), "node=") {
				t.Fatalf("%s: %d %q", v, rec.Code, rec.Body.String())
			}
		}
		if got := h.Output().Writes.Load(); got != wantLines {
			t.Errorf("%s: %d records for %d requests, want %d", v, got, reqs, wantLines)
		}
	}
}

func TestInvalidVariant(t *testing.T) {
	if _, err := NewHandler("worse"); err == nil {
		t.Error("accepted an unknown variant")
	}
}
