package l4snapshot

import (
	"bytes"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestVariantsSnapshotTheTable(t *testing.T) {
	for _, v := range []string{Bad, Fixed} {
		h, err := NewHandler(v)
		if err != nil {
			t.Fatal(err)
		}
		h.table[TableSize-1]++ // the next snapshot must carry it
		copySnapshot(h.snap, h.table, v == Fixed)
		if !bytes.Equal(h.snap, h.table) {
			t.Errorf("%s: snapshot differs from the table", v)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", "/?key=3", nil))
		if rec.Code != 200 || !strings.HasPrefix(rec.Body.String(), `{"key":3,"record":"`) {
			t.Errorf("%s: %d %q", v, rec.Code, rec.Body.String())
		}
		if err := h.Close(); err != nil {
			t.Error(err)
		}
	}
	if _, err := NewHandler("worse"); err == nil {
		t.Error("unknown variant accepted")
	}
}
