package trace

import (
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// syncEach appends a record to a file and fsyncs it, n times.
func syncEach(t testing.TB, n int) {
	f, err := os.Create(filepath.Join(t.TempDir(), "log"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rec := make([]byte, 200)
	for range n {
		if _, err := f.Write(rec); err != nil {
			t.Fatal(err)
		}
		if err := f.Sync(); err != nil {
			t.Fatal(err)
		}
	}
}

func TestSyscallSitesNameTheFsyncs(t *testing.T) {
	const n = 40
	sum := summarize(t, record(t, func() { syncEach(t, n) }))
	var fsync, write *WaitSite
	syscalls := sum.Syscalls()
	for i, s := range syscalls {
		switch {
		case s.HasFunc(func(fn string) bool { return fn == "os.(*File).Sync" }):
			fsync = &syscalls[i]
		case s.HasFunc(func(fn string) bool { return fn == "os.(*File).Write" }):
			write = &syscalls[i]
		}
	}
	if fsync == nil || write == nil {
		t.Fatalf("no fsync or write site among %d sites", len(syscalls))
	}
	if fsync.Count != n || write.Count != n {
		t.Errorf("fsync calls %d, writes %d, want %d each", fsync.Count, write.Count, n)
	}
	if fsync.Total <= 0 || fsync.Max < fsync.Mean() || fsync.Total < fsync.Max {
		t.Errorf("fsync times inconsistent: total %v mean %v max %v", fsync.Total, fsync.Mean(), fsync.Max)
	}
	if !fsync.HasFunc(func(fn string) bool { return fn == "github.com/perfdoctor/perfdoctor/evidence/trace.syncEach" }) {
		t.Errorf("the caller is not on the site's stack: %+v", fsync.Stack)
	}
}

// askSlowPeer makes n round trips to a loopback peer that answers after 2 ms.
func askSlowPeer(t testing.TB, n int) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		c, err := l.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		b := make([]byte, 1)
		for {
			if _, err := c.Read(b); err != nil {
				return
			}
			time.Sleep(2 * time.Millisecond)
			c.Write(b)
		}
	}()
	c, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	b := []byte{1}
	for range n {
		c.Write(b)
		if _, err := c.Read(b); err != nil {
			t.Fatal(err)
		}
	}
}

func TestWaitSitesNameTheNetworkWaits(t *testing.T) {
	const n = 20
	sum := summarize(t, record(t, func() { askSlowPeer(t, n) }))
	for _, w := range sum.Waits {
		if w.Reason == "network" && w.HasFunc(func(fn string) bool { return fn == "github.com/perfdoctor/perfdoctor/evidence/trace.askSlowPeer" }) {
			if w.Count < n || w.Mean() < time.Millisecond {
				t.Errorf("%d network waits of %v on average, want %d of at least 2 ms", w.Count, w.Mean(), n)
			}
			return
		}
	}
	t.Fatalf("no network wait site at askSlowPeer among %d sites", len(sum.Waits))
}
