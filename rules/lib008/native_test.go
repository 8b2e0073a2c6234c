package lib008

import (
	"strings"
	"testing"

	"github.com/perfdoctor/perfdoctor/internal/testprof"
	"github.com/perfdoctor/perfdoctor/rules"
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
	// A write() whose frames name no target: the reschedule on its way
	// back to user space.
	untargetedWrite = []string{"finish_task_switch", "__schedule", "schedule", "exit_to_user_mode_loop", "do_syscall_64",
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
		testprof.Stack{Value: 100, Funcs: untargetedWrite},
		testprof.Stack{Value: 300, Funcs: serving},
	))
	if len(res.Findings) != 1 {
		t.Fatalf("want a logging-cost finding, got %+v", res)
	}
	f := res.Findings[0]
	// The logger's 2%, the 43% of uncalled file writes, and of the 10%
	// of writes that show no target the file's part, 430 of the 580
	// that show one: 7.4%. Never the socket's. That share, as the engine
	// estimates a fix that states no range of its own.
	if want := rules.Estimated(0.524); f.Impact < want-0.005 || f.Impact > want+0.005 {
		t.Errorf("impact %.3f, want the logger's frames, the file writes and their part of the untargeted ones: 0.524, estimated %.3f", f.Impact, want)
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

// Writes that show no target go with the file only where most of those
// that show one are file writes: beside a server's socket writes they are
// its responses' too.
func TestUntargetedWritesFollowTheTargeted(t *testing.T) {
	res := run(testprof.Build(
		testprof.Stack{Value: 20, Funcs: formatting},
		testprof.Stack{Value: 100, Funcs: fileWrite},
		testprof.Stack{Value: 300, Funcs: socketWrite},
		testprof.Stack{Value: 200, Funcs: untargetedWrite},
		testprof.Stack{Value: 380, Funcs: serving},
	))
	if len(res.Findings) != 1 {
		t.Fatalf("want a logging-cost finding, got %+v", res)
	}
	if f, want := res.Findings[0], rules.Estimated(0.12); f.Impact < want-0.005 || f.Impact > want+0.005 {
		t.Errorf("impact %.3f, want the logger's frames and the file writes only: 0.12, estimated %.3f", f.Impact, want)
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
		// ... and uncalled writes that show no target beside them: the
		// responses' system call entries and exits.
		"untargeted beside socket writes": {
			{Value: 20, Funcs: formatting},
			{Value: 400, Funcs: socketWrite},
			{Value: 200, Funcs: untargetedWrite},
			{Value: 380, Funcs: serving},
		},
		// Untargeted writes with no logger on the hot path.
		"untargeted, no logger": {{Value: 300, Funcs: untargetedWrite}, {Value: 700, Funcs: serving}},
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
