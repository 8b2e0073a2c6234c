package frames

import (
	"testing"

	"github.com/perfdoctor/perfdoctor/evidence"
	"github.com/perfdoctor/perfdoctor/internal/testprof"
)

// Kernel samples are charged to the system call they are in, named by the
// kernel's dispatch frame or else the C library's wrapper, and to the
// program's frame above it, whatever the leaf; samples outside system
// calls are not counted.
func TestSyscalls(t *testing.T) {
	entry := []string{"entry_SYSCALL_64_after_hwframe", "do_syscall_64"}
	stack := func(leaf []string, kernelCall, wrapper string, above ...string) []string {
		fs := append([]string{}, leaf...)
		if kernelCall != "" {
			fs = append(fs, kernelCall)
		}
		fs = append(fs, entry[1], entry[0], wrapper)
		return append(fs, above...)
	}
	p := testprof.Build(
		// connect, its leaf a scheduler artefact
		testprof.Stack{Value: 30, Funcs: stack([]string{"finish_task_switch", "__schedule", "schedule"}, "__sys_connect", "__libc_connect", "dial_backend", "main")},
		testprof.Stack{Value: 20, Funcs: stack([]string{"tcp_v4_connect"}, "__x64_sys_connect", "__libc_connect", "dial_backend", "main")},
		// a preemption on the way back from write: named by the wrapper
		testprof.Stack{Value: 25, Funcs: stack([]string{"finish_task_switch", "__schedule", "schedule"}, "exit_to_user_mode_loop", "__GI___libc_write", "send_reply", "main")},
		// read with no program frame seen above the wrapper
		testprof.Stack{Value: 15, Funcs: stack([]string{"tcp_recvmsg"}, "ksys_read", "read")},
		// user time: not a system call
		testprof.Stack{Value: 10, Funcs: []string{"parse", "main"}},
	)
	own := evidence.FuncPrefix("main", "dial_backend", "send_reply", "parse")
	got := Syscalls(evidence.NewStacks(p, ""), own, 10)
	want := []SyscallSite{
		{Syscall: "connect", Share: 0.5, Caller: "dial_backend"},
		{Syscall: "write", Share: 0.25, Caller: "send_reply"},
		{Syscall: "read", Share: 0.15},
	}
	if len(got) != len(want) {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i].Syscall != want[i].Syscall || got[i].Caller != want[i].Caller || got[i].Share < want[i].Share-1e-9 || got[i].Share > want[i].Share+1e-9 {
			t.Errorf("call %d: got %+v, want %+v", i, got[i], want[i])
		}
	}
	if Syscalls(nil, own, 3) != nil {
		t.Error("nil stacks gave calls")
	}
}
