package harness

import (
	"fmt"
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

// recorder keeps what Expect reports instead of failing the test.
type recorder struct {
	testing.TB
	errs []string
}

func (r *recorder) Helper()                   {}
func (r *recorder) Error(args ...any)         { r.errs = append(r.errs, fmt.Sprint(args...)) }
func (r *recorder) Fatalf(f string, a ...any) { r.errs = append(r.errs, fmt.Sprintf(f, a...)) }

func TestExpect(t *testing.T) {
	fs := []Finding{
		{ID: "JVM001", Rule: "JVM001", Class: "exception-overhead", Severity: "high",
			Summary: "exceptions", Evidence: []Fact{{Name: "CPU creating exceptions, VM stack walk included", Value: "31%", Number: 0.31}}},
		{ID: "JVM010", Rule: "JVM010", Class: "jvm-lock-contention", Severity: "low", Summary: "monitor"},
	}
	for _, tc := range []struct {
		want string
		errs int
	}{
		{"top exception-overhead high \"VM stack walk included\"\nnever jvm-lock-contention medium\n", 0},
		{"top JVM001\nfires jvm-lock-contention low\n", 0},
		{"top jvm-lock-contention\n", 1},
		{"top exception-overhead \"measured by async-profiler\"\n", 1},
		{"never exception-overhead medium\nbelow low\n", 2},
		{"bogus exception-overhead\n", 1},
	} {
		r := &recorder{TB: t}
		Expect(r, fs, tc.want)
		if len(r.errs) != tc.errs {
			t.Errorf("%q: %d violations, want %d: %q", tc.want, len(r.errs), tc.errs, r.errs)
		}
	}
}
