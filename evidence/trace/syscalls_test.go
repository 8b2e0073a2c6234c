package trace

import (
	"os"
	"path/filepath"
	"testing"
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
	var fsync, write *SyscallSite
	for i, s := range sum.Syscalls {
		switch {
		case s.HasFunc(func(fn string) bool { return fn == "os.(*File).Sync" }):
			fsync = &sum.Syscalls[i]
		case s.HasFunc(func(fn string) bool { return fn == "os.(*File).Write" }):
			write = &sum.Syscalls[i]
		}
	}
	if fsync == nil || write == nil {
		t.Fatalf("no fsync or write site among %d sites", len(sum.Syscalls))
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
