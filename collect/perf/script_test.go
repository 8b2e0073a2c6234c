package perf

import (
	"context"
	"debug/elf"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// fakePerf writes a stand-in for perf script that prints body, and fails
// as a perf without the field would if asked for srcline: source lines
// are never perf's to find (an addr2line lookup per frame; MariaDB's
// mariadbd took 45 s for 4 s of samples).
func fakePerf(t *testing.T, body string) string {
	t.Helper()
	fake := filepath.Join(t.TempDir(), "perf")
	script := "#!/bin/sh\ncase \"$*\" in *srcline*) echo 'srcline asked for' >&2; exit 1 ;; esac\ncat <<'EOF'\n" + body + "EOF\n"
	if err := os.WriteFile(fake, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return fake
}

// A frame in an object with DWARF line tables gets its file (base name,
// as perf's srcline printed it) and line; kernel, JIT and stripped frames
// get none, and nothing fails.
func TestScriptSourceLines(t *testing.T) {
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Skip("gcc is not installed")
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "hot.c")
	code := "__attribute__((noinline)) int hot(int n) {\n\tint s = 0;\n\tfor (int i = 0; i < n; i++)\n\t\ts += i * i;\n\treturn s;\n}\nint main(int c, char **v) { return hot(c * 1000); }\n"
	if err := os.WriteFile(src, []byte(code), 0o644); err != nil {
		t.Fatal(err)
	}
	prog, stripped := filepath.Join(dir, "hot"), filepath.Join(dir, "hot-stripped")
	for bin, flag := range map[string]string{prog: "-g", stripped: "-s"} {
		if out, err := exec.Command("gcc", "-O1", flag, "-o", bin, src).CombinedOutput(); err != nil {
			t.Fatalf("gcc: %v\n%s", err, out)
		}
	}
	off := symbolOffset(t, prog, "hot")
	body := fmt.Sprintf("hot  4559/4590  28489.490744:   10101010 cpu-clock: \n"+
		"\tffffffff81b954cc iowrite16 ([kernel.kallsyms])\n"+
		"\t%x hot (%s)\n"+
		"\t%x hot (%s)\n"+
		"\t7f0000001010 [unknown] (/tmp/perf-4559.map)\n\n", off, prog, off, stripped)
	fake := fakePerf(t, body)
	lines := newLineSource(time.Minute, slog.New(slog.DiscardHandler))
	p, err := script(context.Background(), fake, "unused", scriptBudget, lines)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Sample) != 1 || len(p.Sample[0].Location) != 4 {
		t.Fatalf("got %d samples, want one of four frames", len(p.Sample))
	}
	var got []string
	for _, l := range p.Sample[0].Location {
		got = append(got, fmt.Sprintf("%s:%d", l.Line[0].Function.Filename, l.Line[0].Line))
	}
	if got[0] != ":0" || got[2] != ":0" || got[3] != ":0" || !strings.HasPrefix(got[1], "hot.c:") || got[1] == "hot.c:0" {
		t.Errorf("frames' lines %q, want only the DWARF one's in hot.c", got)
	}

	// Past the budget the stacks come without lines.
	p, err = script(context.Background(), fake, "unused", scriptBudget, newLineSource(0, slog.New(slog.DiscardHandler)))
	if err != nil || len(p.Sample) != 1 {
		t.Fatalf("budget spent: %v", err)
	}
	for _, l := range p.Sample[0].Location {
		if l.Line[0].Function.Filename != "" {
			t.Errorf("a line past the budget: %+v", l.Line[0])
		}
	}
}

// symbolOffset is the file offset of a function's first instruction.
func symbolOffset(t *testing.T, path, name string) uint64 {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	syms, err := f.Symbols()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range syms {
		if s.Name != name {
			continue
		}
		for _, p := range f.Progs {
			if p.Type == elf.PT_LOAD && s.Value >= p.Vaddr && s.Value < p.Vaddr+p.Filesz {
				return s.Value - p.Vaddr + p.Off + 4
			}
		}
	}
	t.Fatalf("no %s in %s", name, path)
	return 0
}

// A perf without --no-bpf-event (before 5.1) refuses it as an unknown
// option: the recording runs again without it.
func TestRecordWithoutNoBPFEvent(t *testing.T) {
	dir := t.TempDir()
	fake, calls := filepath.Join(dir, "perf"), filepath.Join(dir, "calls")
	body := `#!/bin/sh
case "$1" in
record) echo "$1 $2 $3" >>` + calls + ` ;;
*) echo "$1 $2" >>` + calls + ` ;;
esac
case "$1 $*" in
record*--no-bpf-event*) echo "  Error: unknown option \` + "`" + `no-bpf-event'" >&2; exit 129 ;;
record*) exit 0 ;;
esac
printf 'svc  4559/4590  28489.490744:   10101010 cpu-clock: \n\tffffffff81b954cc iowrite16 ([kernel.kallsyms])\n\n'
`
	if err := os.WriteFile(fake, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	p, err := Record(context.Background(), Options{Perf: fake, Duration: 200 * time.Millisecond})
	if err != nil {
		t.Fatalf("perf without --no-bpf-event: %v", err)
	}
	if len(p.Sample) != 1 {
		t.Errorf("%d samples", len(p.Sample))
	}
	if b, _ := os.ReadFile(calls); string(b) != "record --no-buildid-cache --no-bpf-event\nrecord --no-buildid-cache -g\nscript -i\n" {
		t.Errorf("perf ran as %q", b)
	}
}
