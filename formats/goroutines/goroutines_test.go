package goroutines

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"
)

const sample = `goroutine 1 [running]:
main.main()
	/src/main.go:48 +0x62a

goroutine 105 [chan send (leaked)]:
main.work(...)
	/src/main.go:14
created by main.handle in goroutine 1
	/src/main.go:18 +0x76

goroutine 7 [chan receive, 3 minutes]:
main.(*T).serve(0xc000010000, {0x1, 0x2})
	/src/t.go:30 +0x1d
...additional frames elided...
created by main.start
	/src/t.go:12 +0x40

goroutine 9 gp=0xc000003c00 m=nil [sync.WaitGroup.Wait, 12 minutes, locked to thread]:
sync.(*WaitGroup).Wait(0xc0000b2000)
	/go/src/sync/waitgroup.go:118 +0x60
`

func TestParse(t *testing.T) {
	d, err := Parse(strings.NewReader(sample))
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Goroutines) != 4 {
		t.Fatalf("got %d goroutines, want 4", len(d.Goroutines))
	}
	g := d.Goroutines[1]
	if g.ID != 105 || g.State != "chan send" || !g.Leaked || g.Wait != 0 || !g.Blocked() {
		t.Errorf("leaked goroutine: %+v", g)
	}
	if g.CreatedBy != (Frame{"main.handle", "/src/main.go", 18}) || len(g.Stack) != 1 || g.Stack[0] != (Frame{"main.work", "/src/main.go", 14}) {
		t.Errorf("leaked goroutine's frames: %+v", g)
	}
	if got := g.Site(); got != "main.handle /src/main.go:18" {
		t.Errorf("Site = %q", got)
	}
	g = d.Goroutines[2]
	if g.State != "chan receive" || g.Wait != 3*time.Minute || g.Leaked || g.Stack[0].Func != "main.(*T).serve" || g.CreatedBy.Func != "main.start" {
		t.Errorf("waiting goroutine: %+v", g)
	}
	g = d.Goroutines[3]
	if g.ID != 9 || g.State != "sync.WaitGroup.Wait" || g.Wait != 12*time.Minute || g.CreatedBy.Func != "" {
		t.Errorf("system-traceback goroutine: %+v", g)
	}
	if d.Goroutines[0].Blocked() {
		t.Error("running goroutine reported blocked")
	}
}

func TestNotDump(t *testing.T) {
	for _, in := range []string{"", "hello\n", "heap profile: 1: 2 [3: 4] @ heap/1048576\n", "goroutine x [running]:\n"} {
		if _, err := Parse(strings.NewReader(in)); !errors.Is(err, ErrNotDump) {
			t.Errorf("Parse(%q) = %v, want ErrNotDump", in, err)
		}
		if Looks([]byte(in)) {
			t.Errorf("Looks(%q) = true", in)
		}
	}
	if !Looks([]byte(sample)) {
		t.Error("Looks(sample) = false")
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(sample))
	f.Add([]byte("goroutine 1 [running]:\n"))
	f.Add([]byte("goroutine 2 [select, 99999999999999999999 minutes]:\nf(\n\t:x +0x\ncreated by \n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		d, err := Parse(bytes.NewReader(data))
		if err == nil && len(d.Goroutines) == 0 {
			t.Fatal("no error and no goroutines")
		}
	})
}
