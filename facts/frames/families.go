// Package frames holds function families that several rules must agree
// on, so that one cost is attributed to one finding: formatting under a
// logger is logging-cost, not string-formatting; a logger's writes are not
// syscall-per-write.
package frames

import (
	"strings"

	"github.com/perfdoctor/perfdoctor/evidence"
)

var (
	// Loggers is every logging library's family: LoggerLibraries together.
	Loggers = func() evidence.Matcher {
		ms := make([]evidence.Matcher, len(LoggerLibraries))
		for i, l := range LoggerLibraries {
			ms[i] = l.Frames
		}
		return evidence.Any(ms...)
	}()
	// WriteSyscall is a write system call on a stream. UDP sends (WriteTo,
	// WriteMsg) are one per datagram by nature and writev is already
	// batched, so they are not in it: names match exactly.
	WriteSyscall evidence.Matcher = func(fn string) bool {
		switch fn {
		case "internal/poll.(*FD).Write", "syscall.write", "syscall.Write", "golang.org/x/sys/unix.write", "golang.org/x/sys/unix.Write":
			return true
		}
		return false
	}
)

// Logger is one logging library, named as LIB008 reports it.
type Logger struct {
	Name   string
	Frames evidence.Matcher
}

// LoggerLibraries are the logging libraries: standard log and slog,
// logrus, zap, zerolog, klog, glog, go-kit, hclog; on the JVM log4j,
// logback and SLF4J, java.util.logging; and NativeLoggerLibraries.
var LoggerLibraries = append([]Logger{
	{"log", evidence.FuncPrefix("log.")},
	{"log/slog", evidence.FuncPrefix("log/slog.")},
	{"logrus", evidence.FuncPrefix("github.com/sirupsen/logrus.", "github.com/Sirupsen/logrus.")},
	{"zap", evidence.FuncPrefix("go.uber.org/zap")},
	{"zerolog", evidence.FuncPrefix("github.com/rs/zerolog")},
	{"klog/glog/go-kit/hclog", evidence.FuncPrefix("k8s.io/klog", "github.com/golang/glog.", "github.com/go-kit/log", "github.com/go-kit/kit/log", "github.com/hashicorp/go-hclog.")},
	{"log4j", evidence.FuncPrefix("org.apache.logging.log4j.", "org.apache.log4j.")},
	{"logback/SLF4J", evidence.FuncPrefix("ch.qos.logback.", "org.slf4j.")},
	{"java.util.logging", evidence.FuncPrefix("java.util.logging.")},
}, NativeLoggerLibraries...)

// LogCallerLookup is a JVM logger finding the code that logged: logback's
// caller data (%class, %method, %line, %file in a pattern, or
// includeCallerData), log4j 2's location (includeLocation, %L %M %C %F),
// log4j 1's LocationInfo and java.util.logging's inferCaller. Each record
// creates a Throwable and turns its stack into StackTraceElements: 8.6% of
// the CPU of a Spring Boot service logging one line per request (corpus
// jvm-springboot-log-caller-data), against 16% for all of its logging.
var LogCallerLookup = evidence.FuncPrefix(
	"ch.qos.logback.classic.spi.LoggingEvent.getCallerData", "ch.qos.logback.classic.spi.CallerData.",
	"org.apache.logging.log4j.util.StackLocator", "org.apache.logging.log4j.core.impl.Log4jLogEvent.getSource",
	"org.apache.logging.log4j.core.impl.Log4jLogEvent.calcLocation", "org.apache.logging.log4j.core.async.RingBufferLogEvent.getSource",
	"org.apache.logging.log4j.core.impl.MutableLogEvent.getSource", "org.apache.log4j.spi.LocationInfo.",
	"java.util.logging.LogRecord.inferCaller", "java.util.logging.LogRecord$CallerFinder",
)

// NativeLoggerLibraries are native servers' own loggers, as perf names them
// in C and C++ programs: the error or debug log's writer, not the access
// log's (which logs once per request by design).
var NativeLoggerLibraries = []Logger{
	{"nginx error_log", exact("ngx_log_error_core", "ngx_log_debug_core")},
	{"Apache httpd LogLevel", evidence.Any(exact("log_error_core"), evidence.FuncPrefix("ap_log_error_", "ap_log_rerror_", "ap_log_cerror_", "ap_log_perror_", "ap_log_data_"))},
	// PostgreSQL's ereport calls its message builders (errmsg, errdetail,
	// the bound parameters' string) only for a record it will emit, between
	// errstart and errfinish, not under them: on log_statement = 'all' they
	// were 2.3% of the CPU beside errfinish's 8.3%.
	{"PostgreSQL server log", exact("errstart", "errfinish", "EmitErrorReport", "send_message_to_server_log", "write_syslogger_file", "write_pipe_chunks",
		"errmsg", "errmsg_internal", "errmsg_plural", "errdetail", "errdetail_internal", "errdetail_log", "errdetail_log_plural", "errdetail_plural",
		"errdetail_params", "errhint", "errhint_plural", "errcontext_msg", "BuildParamLogString")},
	{"Redis loglevel", exact("_serverLog", "serverLogRaw")},
	{"syslog(3)", exact("__vsyslog_internal", "__vsyslog_chk", "vsyslog", "syslog", "__syslog_chk")},
	{"glog/spdlog", evidence.FuncPrefix("google::LogMessage", "google::LogDestination", "spdlog::")},
}

// KernelFileWrite is a write() to a regular file as perf shows it: the
// file system's buffered write path, or the file position lock that
// write() takes only on regular files (fdget_pos, and __f_unlock_pos that
// releases it; several processes appending to one shared file spin and
// sleep on it).
var KernelFileWrite = evidence.FuncPrefix("generic_perform_write", "ext4_buffered_write_iter", "ext4_file_write_iter",
	"xfs_file_buffered_write", "xfs_file_write_iter", "btrfs_buffered_write", "btrfs_do_write_iter", "f2fs_file_write_iter",
	"shmem_file_write_iter", "fdget_pos", "__f_unlock_pos")

// KernelOtherWrite is a write() to anything but a regular file as perf
// shows it: a socket, a pipe, a terminal, an eventfd.
var KernelOtherWrite = evidence.FuncPrefix("sock_write_iter", "sock_sendmsg", "__sock_sendmsg", "tcp_sendmsg", "udp_sendmsg",
	"unix_stream_sendmsg", "unix_dgram_sendmsg", "pipe_write", "tty_write", "file_tty_write", "n_tty_write", "eventfd_write")

// SocketSend is a send(), sendto(), sendmsg() or sendmmsg() call, which goes
// to the socket layer without the VFS: /proc/PID/io's write counters
// (syscw, wchar) count write() and writev() to a socket but not these, so a
// server answering through them shows few writes per request whatever it
// sends. SocketWriteCall is the write() path into a socket, which they count.
var (
	SocketSend = evidence.Any(
		evidence.FuncPrefix("__sys_send", "__x64_sys_send", "__arm64_sys_send", "syscall.sendto", "syscall.sendmsg",
			"syscall.SendmsgN", "syscall.Sendto", "golang.org/x/sys/unix.sendto", "golang.org/x/sys/unix.sendmsg", "golang.org/x/sys/unix.Send"),
		exact("send", "sendto", "sendmsg", "sendmmsg", "__send", "__libc_send", "__libc_sendto", "__libc_sendmsg", "__sendmsg", "__sendmmsg"),
	)
	SocketWriteCall = evidence.FuncPrefix("sock_write_iter")
)

// LibcWrite is libc's write() wrapper: where frame-pointer unwinding from
// the kernel usually stops naming callers, since libc is built without
// frame pointers.
var LibcWrite = exact("__GI___libc_write", "__libc_write", "write", "__write", "__write_nocancel", "__GI___write_nocancel")

// WriteTarget is what a write() sample's kernel frames show it wrote to.
type WriteTarget int

const (
	// NotUncalledWrite is any sample but a write() with no named caller.
	NotUncalledWrite WriteTarget = iota
	// FileWrite is a write() to a regular file (KernelFileWrite).
	FileWrite
	// OtherWrite is a write() to a socket, a pipe or a terminal
	// (KernelOtherWrite).
	OtherWrite
	// UnknownTarget is a write() whose frames name no target: the system
	// call's entry and exit, its permission check, libc's wrapper itself,
	// the reschedule on the way back to user space.
	UnknownTarget
)

// UncalledWrites reports, for st's samples, whether one is a write() with
// no named caller above libc's wrapper (the code that wrote is lost to the
// unwinder: every frame above it unsymbolized, or none), and what its
// kernel frames show it wrote to.
func UncalledWrites(st *evidence.Stacks) func(evidence.Sample) WriteTarget {
	file, other, libc, unnamed := st.FrameHits(KernelFileWrite), st.FrameHits(KernelOtherWrite), st.FrameHits(LibcWrite), st.FrameHits(Unsymbolized)
	return func(s evidence.Sample) WriteTarget {
		target, at := UnknownTarget, -1
		for i, f := range s.Frames {
			switch {
			case file[f]:
				target = FileWrite
			case other[f] && target == UnknownTarget:
				target = OtherWrite
			}
			if libc[f] {
				at = i
				break
			}
		}
		if at < 0 {
			return NotUncalledWrite
		}
		for _, f := range s.Frames[at+1:] {
			if !unnamed[f] {
				return NotUncalledWrite
			}
		}
		return target
	}
}

// Native library families, as perf names their frames: by symbol when the
// library has one, and as "[unknown] <library file>" when it is stripped
// (Debian's libz.so keeps only its exported symbols; deflate_slow and
// longest_match are static). Rules match both so that a stripped library
// is still recognised by the file its time was spent in.
var (
	// NativeZlibDeflate is zlib's (and zlib-ng's) compressing half, when the
	// frames are named.
	NativeZlibDeflate = evidence.FuncPrefix("deflate", "longest_match", "fill_window", "compress_block", "_tr_", "send_tree",
		"build_tree", "pqdownheap", "zng_deflate", "zng_longest_match")
	// NativeZlib is zlib: its compressing half, or any time in a stripped
	// libz.so, where the halves cannot be told apart.
	NativeZlib = evidence.Any(inLibrary("libz.so"), NativeZlibDeflate)
	// NativeZstdCompress, NativeBrotliEncode and NativeLZ4 are the other
	// native codecs; only zstd's and brotli's encoders have a level to lower.
	NativeZstdCompress = evidence.Any(inLibrary("libzstd.so"), evidence.FuncPrefix("ZSTD_compress", "ZSTD_compressBlock", "ZSTD_encode"))
	NativeBrotliEncode = evidence.Any(inLibrary("libbrotlienc.so"), evidence.FuncPrefix("BrotliEncoder", "BrotliCompress"))
	NativeLZ4          = evidence.Any(inLibrary("liblz4.so"), evidence.FuncPrefix("LZ4_compress", "LZ4_decompress"))
	// NativeLibdeflate is libdeflate's compressor (its exported functions
	// start libdeflate_; its internals are static).
	NativeLibdeflate = evidence.Any(inLibrary("libdeflate.so"), evidence.FuncPrefix("libdeflate_deflate_compress", "libdeflate_gzip_compress", "libdeflate_zlib_compress"))

	// NativeCompression is every native codec.
	NativeCompression = evidence.Any(NativeZlib, NativeZstdCompress, NativeBrotliEncode, NativeLZ4, NativeLibdeflate)

	// Unsymbolized is a frame perf could not name: "[unknown]", with or
	// without the file it was in.
	Unsymbolized evidence.Matcher = func(fn string) bool { return strings.HasPrefix(fn, "[unknown]") }
)

// inLibrary matches unsymbolized frames in a shared library whose file name
// starts with lib ("libz.so" matches "[unknown] libz.so.1.2.13").
func inLibrary(lib string) evidence.Matcher {
	prefix := "[unknown] " + lib
	return func(fn string) bool { return strings.HasPrefix(fn, prefix) }
}

// LeafShare is the share of a profile whose leaf frame (where the time was
// spent) m matches: for Unsymbolized, the time perf could not name.
func LeafShare(st *evidence.Stacks, m evidence.Matcher) float64 {
	if st == nil {
		return 0
	}
	hit := st.FrameHits(m)
	return st.ShareWhere(func(s evidence.Sample) bool { return len(s.Frames) > 0 && hit[s.Frames[0]] })
}

// SymbolizeAdvice says how to get names for unsymbolized frames.
const SymbolizeAdvice = "install the debug symbols of the binaries and libraries involved (Debian's -dbgsym packages, " +
	"or build with -g and do not strip), record with --call-graph dwarf when code lacks frame pointers, and for JIT " +
	"runtimes write a perf map (/tmp/perf-PID.map: node --perf-basic-prof, -XX:+DumpPerfMapAtExit or async-profiler for the JVM)"

// KernelStorage is the kernel's file system and block device work: page
// cache writeback, journaling, fsync, the block layer and disk drivers
// (virtio-blk's iowrite16 runs under ext4_writepages). Such time is disk,
// never network.
var KernelStorage = evidence.FuncPrefix(
	"ext4_", "ext3_", "xfs_", "btrfs_", "f2fs_", "jbd2", "__jbd2", "iomap_", "filemap_fdatawrite", "filemap_write_and_wait",
	"file_write_and_wait", "__filemap_fdatawrite", "do_writepages", "writeback_", "wb_writeback", "generic_perform_write",
	"vfs_fsync", "do_fsync", "__x64_sys_fsync", "__x64_sys_fdatasync", "__arm64_sys_fsync", "__arm64_sys_fdatasync",
	"submit_bio", "blk_", "__blk_", "bio_", "virtio_queue_rq", "virtblk_", "nvme_", "scsi_", "sd_", "ata_", "dm_",
)

// DiskSyscall is a Go program's file system calls as a CPU profile shows
// them (the kernel time of a call is charged to the goroutine in it):
// syncs, and reads and writes of files.
var DiskSyscall = evidence.FuncPrefix(
	"os.(*File).Sync", "syscall.Fsync", "syscall.Fdatasync", "internal/poll.(*FD).Fsync", "golang.org/x/sys/unix.Fsync",
	"golang.org/x/sys/unix.Fdatasync", "os.(*File).Write", "os.(*File).WriteAt", "os.(*File).WriteString", "os.(*File).Read",
	"os.(*File).ReadAt", "os.(*File).ReadFrom", "os.ReadFile", "os.WriteFile",
)

// SocketIO is work on network sockets as perf names it, on the CPU or
// blocked: the kernel's socket calls and TCP/UDP paths, epoll, and libc's
// wrappers. A native thread with samples in it serves connections; one
// without (redis's bio threads, a WAL writer) works in the background.
var SocketIO = evidence.Any(
	evidence.FuncPrefix("tcp_", "udp_", "sock_", "inet_", "unix_stream_", "ep_poll", "do_epoll_", "__sys_send", "__sys_recv",
		"__sys_accept", "__x64_sys_send", "__x64_sys_recv", "__x64_sys_accept", "__x64_sys_epoll_", "__arm64_sys_send",
		"__arm64_sys_recv", "__arm64_sys_accept", "__arm64_sys_epoll_"),
	exact("epoll_wait", "epoll_pwait", "epoll_pwait2", "accept", "accept4", "recv", "recvfrom", "recvmsg", "send", "sendto", "sendmsg",
		"__libc_recv", "__libc_send", "__libc_recvfrom", "__libc_sendto"),
)
