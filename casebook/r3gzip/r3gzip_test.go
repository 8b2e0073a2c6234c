package r3gzip

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http/httptest"
	"testing"
)

// Both variants answer the same gzip bytes, which decode to the current
// document.
func TestVariantsAgree(t *testing.T) {
	var bodies [][]byte
	for _, v := range []string{Bad, Fixed} {
		h, err := NewHandler(v)
		if err != nil {
			t.Fatal(err)
		}
		defer h.Close()
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
		if rec.Header().Get("Content-Encoding") != "gzip" {
			t.Fatalf("%s: no gzip encoding", v)
		}
		zr, err := gzip.NewReader(bytes.NewReader(rec.Body.Bytes()))
		if err != nil {
			t.Fatal(err)
		}
		plain, err := io.ReadAll(zr)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(plain, Catalogue(h.Version())) {
			t.Errorf("%s: body does not decode to the document", v)
		}
		if ratio := float64(len(plain)) / float64(rec.Body.Len()); ratio < 3 || ratio > 12 {
			t.Errorf("%s: compression ratio %.1f, want a realistic 3-12", v, ratio)
		}
		bodies = append(bodies, rec.Body.Bytes())
	}
	if !bytes.Equal(bodies[0], bodies[1]) {
		t.Error("bad and fixed answer different bytes")
	}
	if _, err := NewHandler("worse"); err == nil {
		t.Error("unknown variant accepted")
	}
}

func BenchmarkServe(b *testing.B) {
	for _, v := range []string{Bad, Fixed} {
		h, _ := NewHandler(v)
		b.Run(v, func(b *testing.B) {
			for range b.N {
				h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/", nil))
			}
		})
		h.Close()
	}
}
