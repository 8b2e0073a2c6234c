package c4strfmt

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
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
		if rec.Code != http.StatusOK || !strings.HasPrefix(rec.Body.String(), "lines=32 bytes=") {
			t.Errorf("%s: %d %q", v, rec.Code, rec.Body.String())
		}
	}
}

func TestInvalidVariant(t *testing.T) {
	if _, err := NewHandler("worse"); err == nil {
		t.Error("accepted an unknown variant")
	}
}

// TestSameReport checks that the fix changes the cost, not the output.
func TestSameReport(t *testing.T) {
	bad, _ := NewHandler(Bad)
	fixed, _ := NewHandler(Fixed)
	var evs [Batch]event
	for i := range evs {
		evs[i] = decode(i * 7)
	}
	a, b := bad.reportSprintf(evs[:]), fixed.reportBuilder(evs[:])
	if a != b {
		t.Fatalf("reports differ:\nbad:   %q\nfixed: %q", a[:200], b[:200])
	}
	if !strings.Contains(a, " seen=") || strings.Count(a, "\n") != Batch {
		t.Errorf("unexpected report %q", a[:200])
	}
	hits := 0
	for line := range strings.Lines(a) {
		if !strings.Contains(line, " seen=0 ") {
			hits++
		}
	}
	t.Logf("%d of %d keys found in the counter table; %d bytes", hits, Batch, len(a))
}

func BenchmarkReport(b *testing.B) {
	var evs [Batch]event
	for i := range evs {
		evs[i] = decode(i)
	}
	for _, v := range []string{Bad, Fixed} {
		h, _ := NewHandler(v)
		b.Run(v, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if v == Bad {
					h.reportSprintf(evs[:])
				} else {
					h.reportBuilder(evs[:])
				}
			}
		})
	}
}
