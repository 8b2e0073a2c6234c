package a1producer

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"
)

// produceRequests counts the produce requests the current broker answered.
func produceRequests(h *Handler) int {
	h.mu.RLock()
	defer h.mu.RUnlock()
	n := 0
	for _, rr := range h.gen.broker.History() {
		if _, ok := rr.Request.(*sarama.ProduceRequest); ok {
			n++
		}
	}
	return n
}

func serve(t *testing.T, h http.Handler, n int) {
	t.Helper()
	for range n {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
		if rec.Code != http.StatusOK || !strings.HasPrefix(rec.Body.String(), "ok seq=") {
			t.Fatalf("%d %q", rec.Code, rec.Body.String())
		}
	}
}

func waitFor(cond func() bool) bool {
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if cond() {
			return true
		}
	}
	return cond()
}

func TestHandler(t *testing.T) {
	defer func(d time.Duration) { RotateEvery = d }(RotateEvery)
	RotateEvery = time.Hour // keep one broker's history for the whole test
	const reqs = 5
	for _, v := range []string{Bad, Fixed} {
		h, err := NewHandler(v)
		if err != nil {
			t.Fatal(err)
		}
		serve(t, h, reqs)
		msgs := reqs * len(Topics)
		switch v {
		case Bad: // one produce request per message
			if !waitFor(func() bool { return produceRequests(h) >= msgs }) || produceRequests(h) != msgs {
				t.Errorf("bad: %d produce requests for %d messages", produceRequests(h), msgs)
			}
		case Fixed: // batched within the flush interval
			if !waitFor(func() bool { return produceRequests(h) > 0 }) || produceRequests(h) >= msgs {
				t.Errorf("fixed: %d produce requests for %d messages", produceRequests(h), msgs)
			}
		}
		if err := h.Close(); err != nil {
			t.Errorf("%s: close: %v", v, err)
		}
		if h.Failed() != 0 {
			t.Errorf("%s: %d messages failed", v, h.Failed())
		}
	}
}

func TestRotation(t *testing.T) {
	defer func(d time.Duration) { RotateEvery = d }(RotateEvery)
	RotateEvery = 20 * time.Millisecond
	h, err := NewHandler(Bad)
	if err != nil {
		t.Fatal(err)
	}
	first := h.gen
	for range 20 {
		serve(t, h, 5)
		time.Sleep(5 * time.Millisecond)
	}
	h.mu.RLock()
	rotated := h.gen != first
	h.mu.RUnlock()
	if !rotated {
		t.Error("the broker was not rotated")
	}
	if err := h.Close(); err != nil {
		t.Error(err)
	}
}

func TestInvalidVariant(t *testing.T) {
	if _, err := NewHandler("worse"); err == nil {
		t.Error("accepted an unknown variant")
	}
}
