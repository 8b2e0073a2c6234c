package lib008

import (
	"strings"
	"testing"

	"github.com/perfdoctor/perfdoctor/internal/testprof"
)

// The shapes perf records for a native server's log writes (leaf first):
// the file system's write path under libc's write(), whose caller the
// unwinder lost, and the file position lock two workers appending to one
// log spin on.
var (
	fileWrite = []string{"copy_folio_from_iter_atomic", "generic_perform_write", "ext4_buffered_write_iter", "vfs_write", "ksys_write",
		"do_syscall_64", "entry_SYSCALL_64_after_hwframe", "__GI___libc_write", "[unknown]"}
	positionLock = []string{"mutex_spin_on_owner", "__mutex_lock", "fdget_pos", "ksys_write", "do_syscall_64",
		"entry_SYSCALL_64_after_hwframe", "__GI___libc_write", "[unknown]"}
	socketWrite = []string{"tcp_sendmsg", "sock_write_iter", "vfs_write", "ksys_write", "do_syscall_64",
		"entry_SYSCALL_64_after_hwframe", "__GI___libc_write", "[unknown]"}
	formatting = []string{"ngx_vslprintf", "ngx_log_error_core", "ngx_http_core_run_phases", "[unknown] nginx"}
	serving    = []string{"ngx_http_process_request", "[unknown] nginx"}
)

func TestNginxDebugLogWrites(t *testing.T) {
	res := run(testprof.Build(
		testprof.Stack{Value: 20, Funcs: formatting},
		testprof.Stack{Value: 300, Funcs: fileWrite},
		testprof.Stack{Value: 130, Funcs: positionLock},
		testprof.Stack{Value: 150, Funcs: socketWrite},
		testprof.Stack{Value: 400, Funcs: serving},
	))
	if len(res.Findings) != 1 {
		t.Fatalf("want a logging-cost finding, got %+v", res)
	}
	f := res.Findings[0]
	// The logger's 2% and the 43% of uncalled file writes; never the socket's.
	if f.Impact < 0.44 || f.Impact > 0.46 {
		t.Errorf("impact %.3f, want the logger's frames and the file writes: 0.45", f.Impact)
	}
	if !strings.Contains(f.Summary, "nginx error_log") || !strings.Contains(f.Summary, "write() calls to the log file") ||
		!strings.Contains(f.Fix, "error_log") || !strings.Contains(f.Fix, "debug_connection") {
		t.Errorf("summary %q fix %q", f.Summary, f.Fix)
	}
	for _, e := range f.Evidence {
		if strings.HasPrefix(e.Name, "fmt formatting") {
			t.Errorf("a native logger shows Go's fmt share: %+v", e)
		}
	}
}

func TestUncalledFileWritesStaySilent(t *testing.T) {
	for name, stacks := range map[string][]testprof.Stack{
		// An append-only file (Redis's AOF, a WAL) written with no logger on
		// the hot path: the writes are the program's data, not its logs.
		"no logger": {{Value: 450, Funcs: fileWrite}, {Value: 550, Funcs: serving}},
		// A logger on the hot path and writes whose caller is named and is
		// not the logger: those writes are the named code's.
		"named caller": {
			{Value: 20, Funcs: formatting},
			{Value: 450, Funcs: append(fileWrite[:len(fileWrite)-1:len(fileWrite)-1], "flushAppendOnlyFile", "serverCron")},
			{Value: 530, Funcs: serving},
		},
		// A logger on the hot path and uncalled writes to sockets: the
		// responses, not the log.
		"socket writes": {{Value: 20, Funcs: formatting}, {Value: 450, Funcs: socketWrite}, {Value: 530, Funcs: serving}},
		// Uncalled file writes beside a logger under 0.5% of the samples.
		"rare logger": {{Value: 4, Funcs: formatting}, {Value: 450, Funcs: fileWrite}, {Value: 546, Funcs: serving}},
	} {
		t.Run(name, func(t *testing.T) {
			if res := run(testprof.Build(stacks...)); len(res.Findings) != 0 {
				t.Errorf("want no finding, got %s: %s", res.Findings[0].Class, res.Findings[0].Summary)
			}
		})
	}
}
