package perf

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// A perf script that runs past the source lines' budget (addr2line
// waiting on a large stripped binary) is read again without them: the
// stacks are kept, only the lines are lost.
func TestScriptDropsSourceLinesPastBudget(t *testing.T) {
	dir := t.TempDir()
	fake := filepath.Join(dir, "perf")
	// Stands in for perf script: stalls when asked for srcline, as perf
	// does on mariadbd, else prints one sample.
	body := `#!/bin/sh
case "$*" in *srcline*) exec sleep 30 ;; esac
printf 'mariadbd  4559/4590  28489.490744:   10101010 cpu-clock: \n\tffffffff81b954cc iowrite16 ([kernel.kallsyms])\n\t7f00000f64c7 __libc_pwrite (/usr/lib/x86_64-linux-gnu/libc.so.6)\n\n'
`
	if err := os.WriteFile(fake, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	old := sourceLineBudget
	sourceLineBudget = 300 * time.Millisecond
	defer func() { sourceLineBudget = old }()

	ctx := context.Background()
	if _, err := script(ctx, fake, "unused", sourceLineBudget, true); !errors.Is(err, errScriptTimeout) {
		t.Fatalf("stalled perf script with source lines: %v, want errScriptTimeout", err)
	}
	p, err := script(ctx, fake, "unused", scriptBudget, false)
	if err != nil {
		t.Fatalf("perf script without source lines: %v", err)
	}
	if len(p.Sample) != 1 || len(p.Sample[0].Location) != 2 {
		t.Fatalf("got %d samples, want one of two frames", len(p.Sample))
	}
}
