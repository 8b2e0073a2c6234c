package bundle

import "time"

// SystemSnapshot is what /proc and the cgroup filesystem say about a local
// target process and its machine at one instant. Two snapshots give rates.
type SystemSnapshot struct {
	Time    time.Time    `json:"time"`
	Process *ProcessInfo `json:"process,omitempty"`
	Machine MachineInfo  `json:"machine"`
	Cgroup  *CgroupInfo  `json:"cgroup,omitempty"`
	Errors  []string     `json:"errors,omitempty"` // parts that could not be read
}

// ProcessInfo describes the target process.
type ProcessInfo struct {
	PID              int     `json:"pid"`
	Comm             string  `json:"comm"`
	Cmdline          string  `json:"cmdline"` // credentials redacted
	Executable       string  `json:"executable,omitempty"`
	GoVersion        string  `json:"go_version,omitempty"` // from the binary's build info
	StartTime        float64 `json:"start_time"`           // seconds since the Unix epoch
	UserCPUSeconds   float64 `json:"user_cpu_seconds"`
	SystemCPUSeconds float64 `json:"system_cpu_seconds"`
	RSSBytes         uint64  `json:"rss_bytes"`
	Threads          int     `json:"threads"`
	OpenFDs          int     `json:"open_fds"`
	FDLimit          uint64  `json:"fd_limit"`
	VoluntaryCtxt    uint64  `json:"voluntary_ctxt_switches"`
	NonvoluntaryCtxt uint64  `json:"nonvoluntary_ctxt_switches"`
	CPUsAllowed      int     `json:"cpus_allowed,omitempty"` // affinity mask size
	// GoEnv holds only the Go runtime's tuning variables (GOGC, GOMEMLIMIT,
	// GOMAXPROCS, GODEBUG) from the process environment; nothing else of the
	// environment is read, since it commonly holds secrets.
	GoEnv map[string]string `json:"go_env,omitempty"`
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
