// Package system reads what Linux says about a local target process and its
// machine: /proc for the process and host, the cgroup filesystem for limits
// and throttling. File roots are configurable so tests run on fixture trees.
package system

import (
	"debug/buildinfo"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/perfdoctor/perfdoctor/internal/redact"

	"github.com/perfdoctor/perfdoctor/bundle"
	"github.com/prometheus/procfs"
)

// Roots are the mount points of procfs and sysfs. The zero value means the
// real ones; tests point them at fixture trees.
type Roots struct {
	Proc string // default "/proc"
	Sys  string // default "/sys"
}

func (r Roots) withDefaults() Roots {
	if r.Proc == "" {
		r.Proc = "/proc"
	}
	if r.Sys == "" {
		r.Sys = "/sys"
	}
	return r
}

// ErrNotLocal means no process on this machine (visible to us) listens on
// the port: the target is remote, in another network namespace, or owned by
// a user whose file descriptors we may not read.
var ErrNotLocal = errors.New("target is not a local process")

// tcpListen is the TCP_LISTEN state in /proc/net/tcp.
const tcpListen = 0x0A

// FindPIDByPort returns the process that owns the listening TCP socket on
// port, looking at IPv4 and IPv6 sockets. It returns an error wrapping
// ErrNotLocal when no visible process owns one.
func FindPIDByPort(roots Roots, port int) (int, error) {
	roots = roots.withDefaults()
	if port <= 0 || port > 65535 {
		return 0, fmt.Errorf("find process for port %d: invalid port", port)
	}
	pfs, err := procfs.NewFS(roots.Proc)
	if err != nil {
		return 0, fmt.Errorf("find process for port %d: %w", port, err)
	}
	inodes := map[string]bool{}
	var readErrs []error
	for _, read := range []func() (procfs.NetTCP, error){pfs.NetTCP, pfs.NetTCP6} {
		lines, err := read()
		if err != nil {
			// tcp6 is absent when IPv6 is disabled; only fail if both are unreadable.
			readErrs = append(readErrs, err)
			continue
		}
		for _, l := range lines {
			if l.St == tcpListen && l.LocalPort == uint64(port) {
				inodes["socket:["+strconv.FormatUint(l.Inode, 10)+"]"] = true
			}
		}
	}
	if len(readErrs) == 2 {
		return 0, fmt.Errorf("find process for port %d: %w", port, errors.Join(readErrs...))
	}
	if len(inodes) == 0 {
		return 0, fmt.Errorf("no local socket listens on port %d: %w", port, ErrNotLocal)
	}
	procs, err := pfs.AllProcs()
	if err != nil {
		return 0, fmt.Errorf("find process for port %d: %w", port, err)
	}
	for _, p := range procs {
		// Other users' fd directories are unreadable without privileges;
		// such processes are simply not candidates.
		targets, err := p.FileDescriptorTargets()
		if err != nil {
			continue
		}
		for _, t := range targets {
			if inodes[t] {
				return p.PID, nil
			}
		}
	}
	return 0, fmt.Errorf("a socket listens on port %d but no process visible to us owns it (another user or namespace?): %w", port, ErrNotLocal)
}

// BuildInfo reads the Go build information embedded in the executable of
// process pid, through /proc/PID/exe so it works across mount namespaces.
func BuildInfo(roots Roots, pid int) (*debug.BuildInfo, error) {
	roots = roots.withDefaults()
	bi, err := buildinfo.ReadFile(filepath.Join(roots.Proc, strconv.Itoa(pid), "exe"))
	if err != nil {
		return nil, fmt.Errorf("build info of pid %d: %w", pid, err)
	}
	return bi, nil
}

// Executable returns the path of process pid's executable as the kernel
// shows it, without the " (deleted)" mark of a replaced binary.
func Executable(roots Roots, pid int) (string, error) {
	roots = roots.withDefaults()
	exe, err := os.Readlink(filepath.Join(roots.Proc, strconv.Itoa(pid), "exe"))
	if err != nil {
		return "", fmt.Errorf("executable of pid %d: %w", pid, err)
	}
	return strings.TrimSuffix(exe, " (deleted)"), nil
}

// goEnvKeys are the only environment variables kept: the Go runtime's tuning
// knobs. The rest of an environment commonly holds secrets.
var goEnvKeys = map[string]bool{"GOGC": true, "GOMEMLIMIT": true, "GOMAXPROCS": true, "GODEBUG": true}

// FilterGoEnv keeps the Go runtime variables of a KEY=VALUE environment list.
func FilterGoEnv(environ []string) map[string]string {
	var out map[string]string
	for _, kv := range environ {
		k, v, ok := strings.Cut(kv, "=")
		if ok && goEnvKeys[k] {
			if out == nil {
				out = map[string]string{}
			}
			out[k] = v
		}
	}
	return out
}

// userHZ is the kernel's clock tick for /proc times (USER_HZ, 100 on every
// Linux architecture Go supports).
const userHZ = 100

// Snapshot reads the machine and, when pid is not 0, the process and its
// cgroup. Parts that cannot be read are listed in Errors; an error is
// returned only when procfs is unusable or the process does not exist.
func Snapshot(roots Roots, pid int) (*bundle.SystemSnapshot, error) {
	return snapshot(roots, pid, nil)
}

// snapshot is Snapshot; the sockets of the processes in tree (the target's
// descendants) count as the target's own.
func snapshot(roots Roots, pid int, tree []procfs.ProcStat) (*bundle.SystemSnapshot, error) {
	roots = roots.withDefaults()
	snap := &bundle.SystemSnapshot{Time: time.Now()}
	fail := func(part string, err error) {
		snap.Errors = append(snap.Errors, part+": "+err.Error())
	}
	pfs, err := procfs.NewFS(roots.Proc)
	if err != nil {
		return nil, fmt.Errorf("system snapshot: %w", err)
	}
	readMachine(pfs, snap, fail)
	if pid == 0 {
		if self, err := pfs.Self(); err != nil {
			fail("net", err)
		} else {
			snap.Net = readNet(roots, pfs, self, false, nil, fail)
		}
		return snap, nil
	}
	proc, err := pfs.Proc(pid)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return snap, fmt.Errorf("system snapshot: process %d does not exist: %w", pid, err)
		}
		fail("process", err)
		return snap, nil
	}
	snap.Net = readNet(roots, pfs, proc, true, tree, fail)
	snap.Process = readProcess(roots, pfs, proc, true, fail)
	cg, err := readCgroup(roots, proc)
	if err != nil {
		fail("cgroup", err)
	}
	snap.Cgroup = cg // nil when the process is in no cgroup with CPU or memory controllers
	return snap, nil
}

func readMachine(pfs procfs.FS, snap *bundle.SystemSnapshot, fail func(string, error)) {
	m := &snap.Machine
	if st, err := pfs.Stat(); err != nil {
		fail("stat", err)
	} else {
		m.NumCPU = len(st.CPU)
		snap.CPUs = readCPUs(st)
	}
	if si, err := pfs.Softirqs(); err != nil {
		fail("softirqs", err)
	} else {
		snap.NetRxSoftirqs, snap.NetTxSoftirqs = si.NetRx, si.NetTx
	}
	if m.NumCPU == 0 {
		if ci, err := pfs.CPUInfo(); err == nil {
			m.NumCPU = len(ci)
		}
	}
	if mi, err := pfs.Meminfo(); err != nil {
		fail("meminfo", err)
	} else {
		if mi.MemTotalBytes != nil {
			m.MemTotalBytes = *mi.MemTotalBytes
		}
		if mi.MemAvailableBytes != nil {
			m.MemAvailBytes = *mi.MemAvailableBytes
		}
	}
	if la, err := pfs.LoadAvg(); err != nil {
		fail("loadavg", err)
	} else {
		m.LoadAvg = [3]float64{la.Load1, la.Load5, la.Load15}
	}
}

// readProcess reads a process's figures; full adds what only the named
// process needs (limits, the Go environment and build, the executable).
func readProcess(roots Roots, pfs procfs.FS, proc procfs.Proc, full bool, fail func(string, error)) *bundle.ProcessInfo {
	p := &bundle.ProcessInfo{PID: proc.PID}
	if st, err := proc.Stat(); err != nil {
		fail("process stat", err)
	} else {
		p.Comm = st.Comm
		p.PPID = st.PPID
		p.UserCPUSeconds = float64(st.UTime) / userHZ
		p.SystemCPUSeconds = float64(st.STime) / userHZ
		p.ExitedChildrenCPUSeconds = float64(st.CUTime+st.CSTime) / userHZ
		p.Threads = st.NumThreads
		if start, err := st.StartTime(); err != nil {
			fail("process start time", err)
		} else {
			p.StartTime = start
		}
	}
	if st, err := proc.NewStatus(); err != nil {
		fail("process status", err)
	} else {
		p.RSSBytes = st.VmRSS
		p.VoluntaryCtxt = st.VoluntaryCtxtSwitches
		p.NonvoluntaryCtxt = st.NonVoluntaryCtxtSwitches
		p.CPUsAllowed = len(st.CpusAllowedList)
	}
	// /proc/PID/status counts the main thread's switches only; a Go
	// program's work runs on the others.
	if threads, err := pfs.AllThreads(proc.PID); err == nil && len(threads) > 0 {
		var vol, invol uint64
		for _, t := range threads {
			if st, err := t.NewStatus(); err == nil {
				vol += st.VoluntaryCtxtSwitches
				invol += st.NonVoluntaryCtxtSwitches
			}
		}
		p.VoluntaryCtxt, p.NonvoluntaryCtxt = vol, invol
	}
	// I/O counters say how many system calls a unit of work costs; the
	// kernel refuses them to another user without ptrace rights, which is
	// no failure of the snapshot.
	if io, err := proc.IO(); err == nil {
		p.IO = &bundle.ProcessIO{ReadSyscalls: io.SyscR, WriteSyscalls: io.SyscW, ReadChars: io.RChar, WriteChars: io.WChar,
			ReadBytes: io.ReadBytes, WriteBytes: io.WriteBytes}
	}
	if n, err := proc.FileDescriptorsLen(); err != nil {
		fail("process fds", err)
	} else {
		p.OpenFDs = n
	}
	if args, err := proc.CmdLine(); err != nil {
		fail("process cmdline", err)
	} else {
		if len(args) == 1 {
			// A title the program wrote over its arguments
			// ("postgres: user db 127.0.0.1(40112) idle"): words, not one
			// argument to quote.
			args = strings.Fields(args[0])
		}
		p.Cmdline = redact.Args(args)
	}
	if !full {
		return p
	}
	if lim, err := proc.Limits(); err != nil {
		fail("process limits", err)
	} else {
		p.FDLimit = lim.OpenFiles
	}
	if env, err := proc.Environ(); err != nil {
		fail("process environ", err)
	} else {
		p.GoEnv = FilterGoEnv(env)
	}
	if exe, err := proc.Executable(); err == nil {
		p.Executable = exe
	}
	if bi, err := BuildInfo(roots, proc.PID); err != nil {
		fail("go version", err)
	} else {
		p.GoVersion = bi.GoVersion
		p.Build = bundle.NewBuildInfo(bi, "executable")
	}
	return p
}
