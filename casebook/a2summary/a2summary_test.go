package a2summary

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestHandler(t *testing.T) {
	for v, want := range map[string]string{
		Bad:   `bid_stage_duration_seconds{stage="auction",quantile="0.999"}`,
		Fixed: `bid_stage_duration_seconds_bucket{stage="auction",le=`,
	} {
		h, err := NewHandler(v)
		if err != nil {
			t.Fatal(err)
		}
		for range 3 {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
			if rec.Code != http.StatusOK || !strings.HasPrefix(rec.Body.String(), "bid=") {
				t.Fatalf("%s: %d %q", v, rec.Code, rec.Body.String())
			}
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
		body := rec.Body.String()
		if rec.Code != http.StatusOK || !strings.Contains(body, want) ||
			!strings.Contains(body, `bid_stage_duration_seconds_count{stage="decode"} 3`) {
			t.Errorf("%s: /metrics %d, want %s and a count of 3:\n%s", v, rec.Code, want, body)
		}
	}
}

func TestInvalidVariant(t *testing.T) {
	if _, err := NewHandler("worse"); err == nil {
		t.Error("accepted an unknown variant")
	}
}
