package disk002

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	rtrace "runtime/trace"
	"strings"
	"sync"
	"syscall"
	"testing"
	"unsafe"

	"github.com/perfdoctor/perfdoctor/facts"

	"github.com/google/pprof/profile"

	"github.com/perfdoctor/perfdoctor/evidence"
	"github.com/perfdoctor/perfdoctor/evidence/trace"
	"github.com/perfdoctor/perfdoctor/internal/testprof"
	"github.com/perfdoctor/perfdoctor/rules"
)

const block = 4096

// directFile writes 8 MiB and opens it for direct I/O, so that every read
// reaches the device; tmpfs has no direct I/O, so the test skips there.
func directFile(t *testing.T) *os.File {
	t.Helper()
	path := filepath.Join(t.TempDir(), "data")
	if err := os.WriteFile(path, bytes.Repeat([]byte("record.."), 1<<20), 0o600); err != nil {
		t.Fatal(err)
	}
	fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_DIRECT, 0)
	if err != nil {
		t.Skipf("no direct I/O on %s: %v", filepath.Dir(path), err)
	}
	return os.NewFile(uintptr(fd), path)
}

func alignedBlock() []byte {
	b := make([]byte, 2*block)
	off := (block - int(uintptr(unsafe.Pointer(&b[0]))%block)) % block
	return b[off : off+block]
}

// diagnose serves handler on loopback, sends it 40 requests on two
// kept-alive connections under an execution trace, and runs the rule.
func diagnose(t *testing.T, handler http.HandlerFunc) rules.Result {
	t.Helper()
	svc := httptest.NewServer(handler)
	defer svc.Close()
	var buf bytes.Buffer
	if err := rtrace.Start(&buf); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 20 {
				if resp, err := http.Get(svc.URL); err == nil {
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
			}
		}()
	}
	wg.Wait()
	rtrace.Stop()
	sum, err := trace.Summarize(&buf)
	if err != nil {
		t.Fatal(err)
	}
	ev := testprof.Evidence(map[evidence.Kind]*profile.Profile{})
	ev.TraceSummary = sum
	return rules.Run(facts.New(ev), []*rules.Rule{Rule})
}

var data *os.File

// readsFromDisk reads eight blocks per request, each from the device.
func readsFromDisk(w http.ResponseWriter, r *http.Request) {
	buf := alignedBlock()
	for i := range 8 {
		if _, err := data.ReadAt(buf, int64(i*97%2048)*block); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
	}
}

var inMemory = bytes.Repeat([]byte("record.."), 1<<20)

// readsFromMemory serves the same blocks from memory.
func readsFromMemory(w http.ResponseWriter, r *http.Request) {
	var n int
	for i := range 8 {
		n += int(inMemory[i*97%2048*block])
	}
	_ = n
}

func TestRequestsWaitingForTheDisk(t *testing.T) {
	data = directFile(t)
	defer data.Close()
	res := diagnose(t, readsFromDisk)
	if len(res.Findings) != 1 {
		t.Fatalf("want one finding: %+v", res)
	}
	f := res.Findings[0]
	if f.Resource != "latency" || !strings.Contains(f.Summary, "disk002.readsFromDisk spends") || !strings.Contains(f.Summary, "8.0 calls per request") {
		t.Errorf("%s %q", f.Resource, f.Summary)
	}
	if len(f.Locations) == 0 || !strings.HasSuffix(f.Locations[0].File, "diskwait_test.go") {
		t.Errorf("the reads are not located: %+v", f.Locations)
	}
}

func TestRequestsServedFromMemoryAreSilent(t *testing.T) {
	if res := diagnose(t, readsFromMemory); len(res.Findings) != 0 {
		t.Errorf("in-memory reads reported: %q", res.Findings[0].Summary)
	}
}
