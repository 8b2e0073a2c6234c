package b3growth

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestHandler(t *testing.T) {
	for _, v := range []string{Bad, Fixed} {
		h, err := Handler(v)
		if err != nil {
			t.Fatal(err)
		}
		n := newEvery * (lookBack + 2)
		for i := range n {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
			body := rec.Body.String()
			if rec.Code != http.StatusOK || !strings.HasPrefix(body, "session=") {
				t.Fatalf("%s: request %d: %d %q", v, i, rec.Code, body)
			}
			// The last request is a returning visitor: its session is kept.
			if i == n-1 && (i%newEvery == 0 || strings.Contains(body, " bytes=0 ")) {
				t.Errorf("%s: earlier session not found: %q", v, body)
			}
		}
	}
}

func TestBounded(t *testing.T) {
	h, _ := Handler(Fixed)
	s := h.(*handler).store.(*ringStore)
	for id := uint64(1); id <= 3*Capacity; id++ {
		s.put(id, newSession(id))
	}
	if _, ok := s.get(1); ok {
		t.Error("fixed kept the oldest session past its capacity")
	}
	if _, ok := s.get(3 * Capacity); !ok {
		t.Error("fixed lost the newest session")
	}

	h, _ = Handler(Bad)
	l := h.(*handler).store.(*leakyStore)
	for id := uint64(1); id <= 3*Capacity; id++ {
		l.put(id, newSession(id))
	}
	if len(l.sessions) != 3*Capacity {
		t.Errorf("bad kept %d sessions, want all %d", len(l.sessions), 3*Capacity)
	}
}

func TestInvalidVariant(t *testing.T) {
	if _, err := Handler("worse"); err == nil {
		t.Error("Handler accepted an unknown variant")
	}
}
