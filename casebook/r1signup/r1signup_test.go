package r1signup

import (
	"net/http/httptest"
	"testing"
)

// Both variants answer the same bytes for every recorded sign-up, and the
// recorded set holds both verdicts.
func TestVariantsAgree(t *testing.T) {
	bad, err := NewHandler(Bad)
	if err != nil {
		t.Fatal(err)
	}
	fixed, err := NewHandler(Fixed)
	if err != nil {
		t.Fatal(err)
	}
	verdicts := map[string]int{}
	for i := range bad.signups {
		b, f := bad.validateBad(&bad.signups[i]), fixed.validateFixed(&fixed.signups[i])
		if string(b) != string(f) {
			t.Fatalf("sign-up %d:\nbad   %s\nfixed %s", i, b, f)
		}
		verdicts[verdict(countValid(fixed, i))]++
	}
	if verdicts["accept"] == 0 || verdicts["reject"] == 0 {
		t.Errorf("verdicts %v: the recorded set must exercise both", verdicts)
	}
	rec := httptest.NewRecorder()
	bad.ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
	if rec.Code != 200 || rec.Body.Len() == 0 {
		t.Errorf("ServeHTTP: %d %q", rec.Code, rec.Body)
	}
	if _, err := NewHandler("worse"); err == nil {
		t.Error("unknown variant accepted")
	}
}

func countValid(h *Handler, i int) int {
	n := 0
	for k := range fields {
		if h.match(k, h.signups[i].values[k]) {
			n++
		}
	}
	return n
}

func BenchmarkValidate(b *testing.B) {
	for _, v := range []string{Bad, Fixed} {
		h, _ := NewHandler(v)
		b.Run(v, func(b *testing.B) {
			for i := range b.N {
				s := &h.signups[i%len(h.signups)]
				if v == Bad {
					h.validateBad(s)
				} else {
					h.validateFixed(s)
				}
			}
		})
	}
}
