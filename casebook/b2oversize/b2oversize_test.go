package b2oversize

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"unsafe"
)

func TestHandler(t *testing.T) {
	var bodies []string
	for _, v := range []string{Bad, Fixed} {
		h, err := NewHandler(v)
		if err != nil {
			t.Fatal(err)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
		if rec.Code != http.StatusOK {
			t.Fatalf("%s: %d %q", v, rec.Code, rec.Body.String())
		}
		bodies = append(bodies, rec.Body.String())
	}
	if bodies[0] != bodies[1] {
		t.Errorf("reports differ: bad %q, fixed %q", bodies[0], bodies[1])
	}
}

// TestAllocation checks the case's point: bytes allocated per request.
func TestAllocation(t *testing.T) {
	for _, tc := range []struct {
		variant  string
		min, max float64
	}{{Bad, MaxLiveStreamers * entrySize, MaxLiveStreamers*entrySize + 8192}, {Fixed, 0, 150*entrySize + 8192}} {
		h, err := NewHandler(tc.variant)
		if err != nil {
			t.Fatal(err)
		}
		req := httptest.NewRequest(http.MethodGet, "/", nil)
		rec := httptest.NewRecorder()
		var sink []Entry
		n := testing.AllocsPerRun(20, func() {
			c := h.seq.Add(1) % categories
			live, history := h.byCategory[c], h.history[c]
			if tc.variant == Bad {
				sink = fill(make([]Entry, MaxLiveStreamers), live, history, 1)
			} else {
				sink = fill(make([]Entry, 0, len(live)), live, history, 1)
			}
		})
		_ = sink
		if n != 1 {
			t.Errorf("%s: %v allocations per report, want 1", tc.variant, n)
		}
		h.ServeHTTP(rec, req)
		bytes := testing.Benchmark(func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				h.ServeHTTP(httptest.NewRecorder(), req)
			}
		}).AllocedBytesPerOp()
		if float64(bytes) < tc.min || float64(bytes) > tc.max {
			t.Errorf("%s: %d bytes allocated per request, want %.0f..%.0f", tc.variant, bytes, tc.min, tc.max)
		}
	}
}

const entrySize = float64(unsafe.Sizeof(Entry{}))

func TestInvalidVariant(t *testing.T) {
	if _, err := NewHandler("worse"); err == nil {
		t.Error("accepted an unknown variant")
	}
}

func BenchmarkServe(b *testing.B) {
	for _, v := range []string{Bad, Fixed} {
		b.Run(v, func(b *testing.B) {
			h, _ := NewHandler(v)
			req := httptest.NewRequest(http.MethodGet, "/", nil)
			b.ReportAllocs()
			for b.Loop() {
				h.ServeHTTP(httptest.NewRecorder(), req)
			}
		})
	}
}
