package a4config

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestHandler(t *testing.T) {
	var bodies [][]byte
	for _, v := range []string{Bad, Fixed} {
		h, err := NewHandler(v)
		if err != nil {
			t.Fatal(err)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
		if err := h.Close(); err != nil {
			t.Error(err)
		}
		if rec.Code != http.StatusOK {
			t.Fatalf("%s: %d %q", v, rec.Code, rec.Body.String())
		}
		line, doc, ok := strings.Cut(rec.Body.String(), "\n")
		if !ok || !strings.HasPrefix(line, "bid campaign=") {
			t.Fatalf("%s: bid line %q", v, line)
		}
		var cfg Config
		if err := json.Unmarshal([]byte(doc), &cfg); err != nil || cfg.Version != configVersion || len(cfg.Campaigns) != campaigns {
			t.Fatalf("%s: config v%d with %d campaigns, %v", v, cfg.Version, len(cfg.Campaigns), err)
		}
		bodies = append(bodies, []byte(doc))
	}
	if !bytes.Equal(bodies[0], bodies[1]) {
		t.Error("bad and fixed serve different documents")
	}
}

// TestRefresh checks that the fixed variant's cached encoding follows a
// published change.
func TestRefresh(t *testing.T) {
	h, err := NewHandler(Fixed)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	if err := h.publish(newConfig(7)); err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
	if got := rec.Header().Get("X-Config-Version"); got != "7" || !strings.Contains(rec.Body.String(), `"version":7,`) {
		t.Errorf("after publishing v7: header %q, body %.80q", got, rec.Body.String())
	}
}

func TestInvalidVariant(t *testing.T) {
	if _, err := NewHandler("worse"); err == nil {
		t.Error("accepted an unknown variant")
	}
}
