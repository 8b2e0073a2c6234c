package harness

import (
	"strings"
	"testing"
)

func TestWhole(t *testing.T) {
	for _, tc := range []struct {
		name string
		fs   []Finding
		want []string
	}{
		{"signable", []Finding{
			{ID: "NET001", Resource: "cpu", Impact: 0.6},
			{ID: "NET003", Resource: "cpu", Impact: 0.3, CausedBy: "NET001"},
			{ID: "MEM002", Resource: "memory", Impact: 0.9}}, nil},
		{"one cost counted twice", []Finding{
			{ID: "NET001", Resource: "cpu", Impact: 0.6},
			{ID: "NET003", Resource: "cpu", Impact: 0.5}}, []string{"CPU impacts sum to 1.10"}},
		{"symptom above its cause", []Finding{
			{ID: "NET003", Resource: "cpu", Impact: 0.3, CausedBy: "NET001"},
			{ID: "NET001", Resource: "cpu", Impact: 0.6}}, []string{"NET003 ranks 1, above or without its cause NET001"}},
		{"cause missing", []Finding{{ID: "GC001", Resource: "cpu", Impact: 0.3, CausedBy: "LIB003"}}, []string{"without its cause LIB003"}},
	} {
		got := Whole(tc.fs)
		ok := len(got) == len(tc.want)
		for i := 0; ok && i < len(got); i++ {
			ok = strings.Contains(got[i], tc.want[i])
		}
		if !ok {
			t.Errorf("%s: got %q, want %q", tc.name, got, tc.want)
		}
	}
}
