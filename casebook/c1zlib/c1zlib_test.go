package c1zlib

import (
	"bytes"
	"compress/zlib"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestHandler(t *testing.T) {
	for _, v := range []string{Bad, Fixed} {
		h, err := NewHandler(v)
		if err != nil {
			t.Fatal(err)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
		var in, out, level int
		var sum string
		if _, err := fmt.Sscanf(rec.Body.String(), "in=%d out=%d level=%d adler32=%s", &in, &out, &level, &sum); err != nil || rec.Code != http.StatusOK {
			t.Fatalf("%s: %d %q: %v", v, rec.Code, rec.Body.String(), err)
		}
		if in != Payload || level != Level[v] || out <= 0 || out > in/4 {
			t.Errorf("%s: in=%d out=%d level=%d", v, in, out, level)
		}
		t.Logf("%s: %d -> %d bytes (%.2f%%)", v, in, out, 100*float64(out)/float64(in))
	}
}

// TestRoundTrip checks that the pooled writers produce valid streams.
func TestRoundTrip(t *testing.T) {
	h, err := NewHandler(Fixed)
	if err != nil {
		t.Fatal(err)
	}
	for i := range payloads {
		if len(payloads[i]) != Payload || &payloads[i][0] != &arena[i][0] {
			t.Fatalf("batch %d: %d bytes, not in the arena", i, len(payloads[i]))
		}
	}
	for i := range 2 {
		var buf bytes.Buffer
		zw := h.writers.Get().(*zlib.Writer)
		zw.Reset(&buf)
		zw.Write(payloads[i])
		zw.Close()
		h.writers.Put(zw)
		zr, err := zlib.NewReader(&buf)
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(zr)
		if err != nil || !bytes.Equal(got, payloads[i]) {
			t.Fatalf("round trip %d: %v", i, err)
		}
	}
}

func TestInvalidVariant(t *testing.T) {
	if _, err := NewHandler("worse"); err == nil {
		t.Error("accepted an unknown variant")
	}
}
