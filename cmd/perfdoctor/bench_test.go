package main

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/perfdoctor/perfdoctor/diagnose"
	"github.com/perfdoctor/perfdoctor/internal/testprof"
)

// bigProfile writes a CPU profile with n distinct stacks, 24 to 40 frames
// deep, over 2000 functions: the size of a busy service's 30 s profile.
func bigProfile(b *testing.B, n int) string {
	b.Helper()
	rng := rand.New(rand.NewPCG(1, 2))
	funcs := make([]string, 2000)
	for i := range funcs {
		funcs[i] = fmt.Sprintf("example.com/svc/pkg%d.(*T).Method%d", i%40, i)
	}
	funcs[0], funcs[1], funcs[2] = "runtime.scanObject", "runtime.gcBgMarkWorker", "runtime.mallocgc"
	stacks := make([]testprof.Stack, n)
	for i := range stacks {
		depth := 24 + rng.IntN(17)
		fs := make([]string, depth)
		for j := range fs {
			fs[j] = funcs[rng.IntN(len(funcs))]
		}
		stacks[i] = testprof.Stack{Value: 1 + int64(rng.IntN(20)), Funcs: fs}
	}
	path := filepath.Join(b.TempDir(), "cpu.pb.gz")
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	if err := testprof.Build(stacks...).Write(f); err != nil {
		b.Fatal(err)
	}
	f.Close()
	return path
}

// BenchmarkDiagnose measures perfdoctor diagnose end to end (parse, flatten,
// every rule, rank) on a large profile; compare with `go tool pprof -top`
// on the same file (see the README's "Speed" section).
func BenchmarkDiagnose(b *testing.B) {
	for _, n := range []int{10_000, 100_000} {
		path := bigProfile(b, n)
		if dst := os.Getenv("PERFDOCTOR_BENCH_PROFILE_DIR"); dst != "" {
			data, _ := os.ReadFile(path)
			os.WriteFile(filepath.Join(dst, fmt.Sprintf("cpu-%d.pb.gz", n)), data, 0o644)
		}
		b.Run(fmt.Sprintf("stacks=%d", n), func(b *testing.B) {
			for b.Loop() {
				if _, err := diagnose.Run(b.Context(), diagnose.Request{Paths: []string{path}}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
