package frames

import (
	"slices"
	"strings"

	"github.com/perfdoctor/perfdoctor/evidence"
)

// Kernel time read by cause: a perf stack that enters the kernel through
// the system call entry is charged to that system call and to the
// program's frame that made it, whatever the leaf. On a VM's software
// cpu-clock the leaf is often a scheduler artefact (finish_task_switch,
// _raw_spin_unlock_irqrestore: where samples taken with interrupts off
// land), while the work that matters is the system call above it.

// syscallEntry is the kernel's system call entry on x86-64 and arm64.
var syscallEntry = evidence.FuncPrefix("entry_SYSCALL_64", "do_syscall_64", "el0_svc", "invoke_syscall", "__arm64_sys_")

// SchedulerArtefacts are the leaves where a software clock's samples with
// interrupts off land: they say the thread was switched or woken, not
// what it was doing.
var SchedulerArtefacts = evidence.FuncPrefix("finish_task_switch", "_raw_spin_unlock_irqrestore", "__raw_spin_unlock_irq", "_raw_spin_unlock_irq")

// FutexWait is a thread asleep on a futex in the kernel: a native
// program's lock, condition variable or semaphore (glibc's pthread and
// sem_* primitives all sleep here; a PostgreSQL backend queued on an LWLock
// does). FutexWake is the kernel waking such sleepers, on the releasing
// thread's stack.
var (
	FutexWait = evidence.FuncPrefix("futex_wait", "__futex_wait")
	FutexWake = evidence.FuncPrefix("futex_wake")
)

// dispatchExit are kernel frames right under do_syscall_64 that are the
// return to user space (a preemption there), not the call itself.
var dispatchExit = evidence.FuncPrefix("exit_to_user_mode", "syscall_exit_to_user_mode", "irqentry_exit")

// SyscallSite is one system call's share of kernel samples and the frame
// of the program that made it most.
type SyscallSite struct {
	Syscall string
	Share   float64 // of all samples
	Caller  string  // the program's frame above the call, "" when not seen
}

// Syscalls charges each sample inside a system call to the call's name
// (from the kernel's dispatch frame, else the C library's wrapper) and to
// the first frame above the wrapper that own accepts (the program's code),
// and returns the calls by share, at most n. Samples outside system calls
// are not counted.
func Syscalls(st *evidence.Stacks, own evidence.Matcher, n int) []SyscallSite {
	if st == nil || st.Total == 0 {
		return nil
	}
	entry, exit := st.FrameHits(syscallEntry), st.FrameHits(dispatchExit)
	ownHit := st.FrameHits(own)
	type acc struct {
		v       int64
		callers map[string]int64
	}
	by := map[string]*acc{}
	for _, s := range st.Samples {
		// Frames run from the leaf to the root: find the outermost entry.
		at := -1
		for i := len(s.Frames) - 1; i >= 0; i-- {
			if entry[s.Frames[i]] {
				at = i
				break
			}
		}
		if at < 0 {
			continue
		}
		name := ""
		// Under the entry frames, the first that is neither entry nor exit
		// names the call (__x64_sys_close, ksys_read, __sys_connect).
		for i := at - 1; i >= 0; i-- {
			f := s.Frames[i]
			if entry[f] {
				continue
			}
			if !exit[f] {
				name = kernelCallName(st.Frames[f].Func)
			}
			break
		}
		// Above it, the C library's wrapper, then the program.
		wrapper, caller := "", ""
		for i := at + 1; i < len(s.Frames); i++ {
			fn := st.Frames[s.Frames[i]].Func
			if wrapper == "" {
				wrapper = fn
				continue
			}
			if ownHit[s.Frames[i]] {
				caller = fn
				break
			}
		}
		if name == "" {
			name = libcCallName(wrapper)
		}
		if name == "" {
			name = "(unknown call)"
		}
		a := by[name]
		if a == nil {
			a = &acc{callers: map[string]int64{}}
			by[name] = a
		}
		a.v += s.Value
		if caller != "" {
			a.callers[caller] += s.Value
		}
	}
	out := make([]SyscallSite, 0, len(by))
	for name, a := range by {
		site := SyscallSite{Syscall: name, Share: float64(a.v) / float64(st.Total)}
		var best int64
		for c, v := range a.callers {
			if v > best || (v == best && c < site.Caller) {
				site.Caller, best = c, v
			}
		}
		out = append(out, site)
	}
	slices.SortFunc(out, func(a, b SyscallSite) int {
		if a.Share != b.Share {
			if a.Share > b.Share {
				return -1
			}
			return 1
		}
		return strings.Compare(a.Syscall, b.Syscall)
	})
	if len(out) > n {
		out = out[:n]
	}
	return out
}

// kernelCallName is the system call a kernel dispatch frame implements:
// __x64_sys_close, __se_sys_close, __do_sys_close, ksys_read, __sys_connect.
func kernelCallName(fn string) string {
	for _, p := range []string{"__x64_sys_", "__ia32_sys_", "__arm64_sys_", "__se_sys_", "__do_sys_", "__sys_", "ksys_"} {
		if rest, ok := strings.CutPrefix(fn, p); ok && rest != "" {
			return rest
		}
	}
	return ""
}

// libcCallName is the system call a C library wrapper makes, by its name:
// __libc_connect, __GI___libc_write, __close, read.
func libcCallName(fn string) string {
	if fn == "" || strings.HasPrefix(fn, "[unknown]") || strings.ContainsAny(fn, ".(/") {
		return ""
	}
	for _, p := range []string{"__GI___libc_", "__libc_", "__GI___", "__GI_", "__"} {
		fn = strings.TrimPrefix(fn, p)
	}
	return strings.TrimSuffix(fn, "_nocancel")
}

// GoSync is a Go program's disk sync as its frames name it; DiskSync is a
// sync in perf's or a CPU profile's frames: Go's wrappers, libc's, and the
// kernel's entry points (DISK001's, which DISK002's reads leave out).
var (
	GoSync = evidence.FuncPrefix("os.(*File).Sync", "syscall.Fsync", "syscall.Fdatasync", "internal/poll.(*FD).Fsync",
		"golang.org/x/sys/unix.Fsync", "golang.org/x/sys/unix.Fdatasync")
	DiskSync = evidence.Any(GoSync, evidence.FuncPrefix("fsync", "fdatasync", "__libc_fsync", "__libc_fdatasync",
		"__x64_sys_fsync", "__x64_sys_fdatasync", "__arm64_sys_fsync", "__arm64_sys_fdatasync", "do_fsync"))
)

// KernelFileRead is a read of a regular file's data as perf shows it: a
// file system's read path (through the page cache or direct I/O: ext4's
// and xfs's iomap_dio_rw under their read_iter), the page cache's own read
// (filemap_read, and sendfile's filemap_splice_read), a page fault on a
// mapped file (filemap_fault). A socket's or a pipe's read has none of
// these frames; a direct-I/O write's iomap_dio_rw is under a write_iter,
// not a read_iter.
var KernelFileRead = evidence.FuncPrefix("ext4_file_read_iter", "ext4_dio_read_iter", "xfs_file_read_iter", "xfs_file_dio_read",
	"xfs_file_buffered_read", "btrfs_file_read_iter", "f2fs_file_read_iter", "generic_file_read_iter", "blkdev_read_iter",
	"filemap_read", "filemap_get_pages", "filemap_splice_read", "filemap_fault", "page_cache_sync_ra", "ext4_mpage_readpages")

// IOWait is a thread asleep until the block device completes its I/O:
// the kernel's io_schedule and io_schedule_timeout, which count the sleep
// as iowait (a direct read's wait for its bio, a buffered read's wait on
// the page's lock, folio_wait_bit, until the read fills it).
var IOWait = evidence.FuncPrefix("io_schedule")

// KernelIOCompletion is the block layer finishing a device's request, in
// the interrupt or soft interrupt that runs it on whichever thread it
// interrupted: the request's end, the bio's completion, the direct-I/O
// completion that wakes the waiting thread, the virtio and NVMe queues'
// completion handlers.
var KernelIOCompletion = evidence.FuncPrefix("blk_mq_end_request", "blk_mq_complete_request", "blk_complete_reqs", "blk_done_softirq",
	"blk_update_request", "bio_endio", "iomap_dio_bio_end_io", "virtblk_done", "nvme_irq", "nvme_pci_complete", "scsi_io_completion")
