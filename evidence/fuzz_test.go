package evidence

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"runtime/pprof"
	"testing"
)

// FuzzLoad feeds arbitrary bytes through content sniffing and the profile
// parsers: any input must give evidence or an error, never a panic.
func FuzzLoad(f *testing.F) {
	for _, name := range []string{"heap", "goroutine", "allocs"} {
		var buf bytes.Buffer
		pprof.Lookup(name).WriteTo(&buf, 0)
		f.Add(buf.Bytes())
	}
	var text bytes.Buffer
	pprof.Lookup("heap").WriteTo(&text, 1)
	f.Add(text.Bytes())
	f.Add([]byte("go 1.26 trace\x00\x00\x00"))
	f.Add([]byte(`{"num_gc": 3, "source": "x"}`))
	f.Add([]byte(`{"machine": {"num_cpu": 2}}`))
	f.Add([]byte{0x0a, 0x02, 0x08, 0x01})
	f.Add([]byte("goroutine 7 [chan send, 3 minutes]:\nmain.work(...)\n\t/src/main.go:14\ncreated by main.handle in goroutine 1\n\t/src/main.go:18 +0x76\n"))
	f.Add([]byte("demo 77/77 1.5: 10 cpu-clock:\n\tffff81 tcp_v4_connect+0x1 ([kernel.kallsyms])\n\n"))
	f.Add([]byte("demo 77/77 1.5: 10 cycles:u:\nffff81 tcp_v4_connect+0x1 ([kernel.kallsyms])\n\n"))
	f.Add([]byte("main;;java/io/F.read(Ljava/io/FileDescriptor;JI)I_[j] 10000000\n"))
	f.Add([]byte("func_ab 15294 cpu-clock:\n\t400570 func_b (/root/func_ab)\n\n"))
	f.Add([]byte("heap profile: 1: 2 [ 1: 2] @ growthz\n 1: 2 [ 1: 2] @ 0x1 0x2\n"))
	// The look-alike corpus and the legacy profiles seed the sniffers' edges.
	for _, dir := range []string{"testdata/lookalike", "testdata/gperftools", "testdata/gothreads", "../formats/perfscript/testdata/notime"} {
		entries, _ := os.ReadDir(dir)
		for _, ent := range entries {
			if data, err := os.ReadFile(filepath.Join(dir, ent.Name())); err == nil {
				f.Add(data[:min(len(data), 4096)])
			}
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(t.TempDir(), "in")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		ev, err := Load(context.Background(), LoadOptions{}, path)
		if err == nil && NewStacks(ev.Profile(CPU), "cpu") == nil && ev.Profile(CPU) != nil {
			t.Error("CPU profile without stacks")
		}
	})
}
