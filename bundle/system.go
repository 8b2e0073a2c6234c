package bundle

import "time"

// SystemSnapshot is what /proc and the cgroup filesystem say about a local
// target process and its machine at one instant. Two snapshots give rates.
type SystemSnapshot struct {
	Time    time.Time    `json:"time"`
	Process *ProcessInfo `json:"process,omitempty"`
	Machine MachineInfo  `json:"machine"`
	Cgroup  *CgroupInfo  `json:"cgroup,omitempty"`
	// CPUs are the per-CPU time counters of /proc/stat, cumulative since
	// boot: only the difference between two snapshots means something.
	CPUs []CPUTimes `json:"cpus,omitempty"`
	// NetRxSoftirqs and NetTxSoftirqs count NET_RX and NET_TX softirqs per
	// CPU (/proc/softirqs), cumulative.
	NetRxSoftirqs []uint64 `json:"net_rx_softirqs,omitempty"`
	NetTxSoftirqs []uint64 `json:"net_tx_softirqs,omitempty"`
	Net           *NetInfo `json:"net,omitempty"`
	// Children are the process's descendants (children, their children...)
	// at this instant, busiest first in CPU time, at most MaxChildren: a
	// server whose work runs in processes it forked (a database's
	// backends, a web server's workers) is idle itself.
	Children []ProcessInfo `json:"children,omitempty"`
	// MoreChildren counts the descendants beyond MaxChildren, not read.
	MoreChildren int      `json:"more_children,omitempty"`
	Errors       []string `json:"errors,omitempty"` // parts that could not be read
}

// MaxChildren bounds SystemSnapshot.Children.
const MaxChildren = 512

// CPUTimes is one CPU's time in seconds by state since boot.
type CPUTimes struct {
	CPU     int     `json:"cpu"`
	User    float64 `json:"user"` // including nice
	System  float64 `json:"system"`
	Idle    float64 `json:"idle"`
	IOWait  float64 `json:"iowait"`
	IRQ     float64 `json:"irq"`
	SoftIRQ float64 `json:"softirq"`
	Steal   float64 `json:"steal"`
}

// Total is the time the CPU counted in every state.
func (c CPUTimes) Total() float64 {
	return c.User + c.System + c.Idle + c.IOWait + c.IRQ + c.SoftIRQ + c.Steal
}

// Sub is c minus an earlier reading: the time spent in each state between them.
func (c CPUTimes) Sub(earlier CPUTimes) CPUTimes {
	return CPUTimes{CPU: c.CPU, User: c.User - earlier.User, System: c.System - earlier.System,
		Idle: c.Idle - earlier.Idle, IOWait: c.IOWait - earlier.IOWait, IRQ: c.IRQ - earlier.IRQ,
		SoftIRQ: c.SoftIRQ - earlier.SoftIRQ, Steal: c.Steal - earlier.Steal}
}

// NetInfo is the host's (the network namespace's) TCP state, counters and settings.
type NetInfo struct {
	Sysctls NetSysctls `json:"sysctls"`
	// TCPStates counts IPv4 and IPv6 TCP sockets by state name
	// (ESTABLISHED, TIME_WAIT, ...).
	TCPStates map[string]int `json:"tcp_states,omitempty"`
	// Remotes counts outbound sockets (those not on a listening port) by
	// remote endpoint and state, for at most MaxRemotes endpoints, busiest
	// first: those the target holds sockets to (RemoteEndpoint.Process),
	// then the host's busiest others.
	Remotes []RemoteEndpoint `json:"remotes,omitempty"`
	// TimeWaitAges says RemoteEndpoint.RecentTimeWait was counted (from the
	// TIME_WAIT timers in /proc/net/tcp).
	TimeWaitAges bool `json:"time_wait_ages,omitempty"`
	// ProcessSockets says RemoteEndpoint.Process was counted: the snapshot
	// is of a target process whose descriptors could be read.
	ProcessSockets bool `json:"process_sockets,omitempty"`
	// Listeners are the listening sockets with their accept queues.
	Listeners []Listener `json:"listeners,omitempty"`
	// UDPPeers are the remote endpoints of the target's connected UDP
	// sockets (its descendants' included when the snapshot is of its
	// tree), most sockets first, at most MaxRemotes: a DNS forwarder's
	// upstreams, a statsd client's server. Unconnected sockets name no peer.
	UDPPeers []UDPPeer `json:"udp_peers,omitempty"`
	// UDPPeersRead says UDPPeers was read: a snapshot of a target whose
	// descriptors could be read by a collector that records them. Without
	// it nothing is known of the target's UDP peers.
	UDPPeersRead bool `json:"udp_peers_read,omitempty"`
	// Counters are cumulative kernel counters from /proc/net/snmp and
	// /proc/net/netstat, named "Tcp.RetransSegs", "TcpExt.ListenOverflows", ...
	Counters  map[string]uint64 `json:"counters,omitempty"`
	Conntrack *Conntrack        `json:"conntrack,omitempty"` // nil without netfilter conntrack
}

// MaxRemotes bounds NetInfo.Remotes and NetInfo.Listeners.
const MaxRemotes = 32

// RecentSeconds is the age under which a TIME_WAIT entry counts as recent:
// entries closed in the last RecentSeconds, over RecentSeconds, are the
// current rate of new connections to a destination.
const RecentSeconds = 5

// RemoteEndpoint is the sockets connected to one remote address and port.
type RemoteEndpoint struct {
	Addr   string         `json:"addr"` // host:port
	Total  int            `json:"total"`
	States map[string]int `json:"states"`
	// RecentTimeWait counts the TIME_WAIT entries younger than RecentSeconds.
	RecentTimeWait int `json:"recent_time_wait,omitempty"`
	// Process counts the sockets to this endpoint that the target process
	// holds (when NetInfo.ProcessSockets), with its descendants' when the
	// snapshot is of its tree (a multi-process server's workers hold its
	// connections); TIME_WAIT sockets have no owner.
	Process int `json:"process,omitempty"`
}

// UDPPeer is the target's connected UDP sockets to one remote endpoint.
type UDPPeer struct {
	Addr    string `json:"addr"` // host:port
	Sockets int    `json:"sockets"`
	// Local is the process on this machine that owns the socket the
	// datagrams reach, for a peer on loopback whose owner could be read
	// (nil otherwise): its CPU time in two snapshots is what it spent
	// over the window, answering the target among others.
	Local *PeerProcess `json:"local,omitempty"`
}

// PeerProcess is a local peer process at one instant.
type PeerProcess struct {
	PID              int     `json:"pid"`
	Comm             string  `json:"comm"`
	StartTime        float64 `json:"start_time"` // seconds since the Unix epoch: a PID seen again with another is another process
	UserCPUSeconds   float64 `json:"user_cpu_seconds"`
	SystemCPUSeconds float64 `json:"system_cpu_seconds"`
}

// CPUSeconds is the process's user and system time.
func (p PeerProcess) CPUSeconds() float64 { return p.UserCPUSeconds + p.SystemCPUSeconds }

// Listener is a listening socket. Queue is the connections waiting for
// accept; Backlog the most the kernel will queue (min(listen backlog, somaxconn)).
type Listener struct {
	Addr    string `json:"addr"`
	Queue   uint64 `json:"queue"` // connections waiting to be accepted
	Backlog uint64 `json:"backlog"`
	// Process says the target process or one of its descendants holds the
	// socket (NetInfo.ProcessSockets): a queue the target's workers serve.
	Process bool `json:"process,omitempty"`
}

// NetSysctls are the kernel settings the network rules judge by. Zero means unread.
type NetSysctls struct {
	PortRangeLow     int `json:"ip_local_port_range_low,omitempty"`
	PortRangeHigh    int `json:"ip_local_port_range_high,omitempty"`
	TCPFinTimeout    int `json:"tcp_fin_timeout,omitempty"`
	TCPTWReuse       int `json:"tcp_tw_reuse"`
	TCPMaxTWBuckets  int `json:"tcp_max_tw_buckets,omitempty"`
	Somaxconn        int `json:"somaxconn,omitempty"`
	TCPMaxSynBacklog int `json:"tcp_max_syn_backlog,omitempty"`
}

// EphemeralPorts is how many local ports outbound connections may use.
func (s NetSysctls) EphemeralPorts() int {
	if s.PortRangeHigh < s.PortRangeLow || s.PortRangeLow == 0 {
		return 0
	}
	return s.PortRangeHigh - s.PortRangeLow + 1
}

// Conntrack is netfilter's connection tracking table.
type Conntrack struct {
	Count uint64 `json:"count"`
	Max   uint64 `json:"max"`
	// Drops and EarlyDrops are summed over CPUs (cumulative): packets dropped
	// because the table was full.
	Drops        uint64 `json:"drops"`
	EarlyDrops   uint64 `json:"early_drops"`
	InsertFailed uint64 `json:"insert_failed"`
}

// ProcessInfo describes the target process.
type ProcessInfo struct {
	PID        int    `json:"pid"`
	PPID       int    `json:"ppid,omitempty"` // the parent process
	Comm       string `json:"comm"`
	Cmdline    string `json:"cmdline"` // credentials redacted
	Executable string `json:"executable,omitempty"`
	GoVersion  string `json:"go_version,omitempty"` // from the binary's build info
	// Build is the executable's build information, for Go programs.
	Build            *BuildInfo `json:"build,omitempty"`
	StartTime        float64    `json:"start_time"` // seconds since the Unix epoch
	UserCPUSeconds   float64    `json:"user_cpu_seconds"`
	SystemCPUSeconds float64    `json:"system_cpu_seconds"`
	// ExitedChildrenCPUSeconds is the CPU time of its children that exited
	// and were waited for (cutime and cstime), their own exited children's
	// included: the work of short-lived children no snapshot sees.
	ExitedChildrenCPUSeconds float64 `json:"exited_children_cpu_seconds,omitempty"`
	RSSBytes                 uint64  `json:"rss_bytes"`
	Threads                  int     `json:"threads"`
	OpenFDs                  int     `json:"open_fds"`
	FDLimit                  uint64  `json:"fd_limit"`
	VoluntaryCtxt            uint64  `json:"voluntary_ctxt_switches"` // of all threads

	NonvoluntaryCtxt uint64 `json:"nonvoluntary_ctxt_switches"`
	CPUsAllowed      int    `json:"cpus_allowed,omitempty"` // affinity mask size
	// GoEnv holds only the Go runtime's tuning variables (GOGC, GOMEMLIMIT,
	// GOMAXPROCS, GODEBUG) from the process environment; nothing else of the
	// environment is read, since it commonly holds secrets.
	GoEnv map[string]string `json:"go_env,omitempty"`
	// IO is /proc/PID/io, the process's I/O system calls and bytes since it
	// started; nil where the kernel does not let us read it.
	IO *ProcessIO `json:"io,omitempty"`
}

// ProcessIO is a process's I/O counters since it started (/proc/PID/io):
// system calls that read and write (files, sockets and pipes alike) and
// the bytes they moved, and the bytes that reached the storage layer.
type ProcessIO struct {
	ReadSyscalls  uint64 `json:"read_syscalls"`
	WriteSyscalls uint64 `json:"write_syscalls"`
	ReadChars     uint64 `json:"read_chars"`
	WriteChars    uint64 `json:"write_chars"`
	ReadBytes     uint64 `json:"read_bytes"`  // from storage
	WriteBytes    uint64 `json:"write_bytes"` // to storage
}

// MachineInfo describes the host.
type MachineInfo struct {
	NumCPU        int        `json:"num_cpu"`
	MemTotalBytes uint64     `json:"mem_total_bytes"`
	MemAvailBytes uint64     `json:"mem_available_bytes"`
	LoadAvg       [3]float64 `json:"load_avg"`
}

// CgroupInfo is the process's cgroup limits and counters. A zero limit means none.
type CgroupInfo struct {
	Version          int     `json:"version"` // 1 or 2
	Path             string  `json:"path"`
	CPUQuotaCores    float64 `json:"cpu_quota_cores,omitempty"` // quota/period
	MemoryLimitBytes uint64  `json:"memory_limit_bytes,omitempty"`
	MemoryUsageBytes uint64  `json:"memory_usage_bytes,omitempty"`
	NrPeriods        uint64  `json:"nr_periods,omitempty"`
	NrThrottled      uint64  `json:"nr_throttled,omitempty"`
	ThrottledUsec    uint64  `json:"throttled_usec,omitempty"`
}

// ChildrenAcross pairs a process's descendants across two snapshots of its
// tree: each descendant at the end with itself at the start (nil when it
// was born in the window; a PID seen at both ends with another start time
// is a new process). It returns how many descendants of the start are gone
// by the end, and the CPU seconds of those that exited in between: reaped
// children's time lands in their parent's cutime and cstime, so what the
// parents gained there, less what the gone ones had used at the start.
// Both snapshots must hold the process.
func ChildrenAcross(start, end *SystemSnapshot, each func(now ProcessInfo, before *ProcessInfo)) (gone int, exitedCPU float64) {
	cpu := func(p ProcessInfo) float64 { return p.UserCPUSeconds + p.SystemCPUSeconds }
	before := map[int]ProcessInfo{}
	for _, p := range start.Children {
		before[p.PID] = p
	}
	reaped := max(end.Process.ExitedChildrenCPUSeconds-start.Process.ExitedChildrenCPUSeconds, 0)
	for _, p := range end.Children {
		if b, ok := before[p.PID]; ok && b.StartTime == p.StartTime {
			reaped += max(p.ExitedChildrenCPUSeconds-b.ExitedChildrenCPUSeconds, 0)
			delete(before, p.PID)
			each(p, &b)
			continue
		}
		each(p, nil)
	}
	var goneCPU float64
	for _, b := range before {
		goneCPU += cpu(b)
	}
	return len(before), max(reaped-goneCPU, 0)
}
