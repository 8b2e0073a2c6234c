package agent

import (
	"errors"
	"io/fs"
	"math"

	"github.com/perfdoctor/perfdoctor/internal/cgroupfs"
)

// Limits is what the cgroup hierarchy says about this process's CPU and
// memory limits. Limits set on any ancestor bind too (a Kubernetes pod, a
// systemd slice), so each effective limit is the smallest found walking from
// the process's own cgroup up to the mount root. Zero means no limit.
type Limits struct {
	Version     int     `json:"version"` // 1 or 2
	Path        string  `json:"path"`    // the process's cgroup, from /proc/self/cgroup
	CPUCores    float64 `json:"cpu_cores,omitempty"`
	CPUFrom     string  `json:"cpu_from,omitempty"` // the cgroup that set CPUCores
	MemoryBytes uint64  `json:"memory_bytes,omitempty"`
	MemoryFrom  string  `json:"memory_from,omitempty"` // the cgroup that set MemoryBytes
	// Levels lists every cgroup read on the way up, leaf first, with the
	// limits it sets; a level that sets none is listed with zeros.
	Levels []Level `json:"levels"`
}

// Level is one cgroup on the way from the process up to the root.
type Level struct {
	Hierarchy   string  `json:"hierarchy"` // "unified" (v2), "cpu" or "memory" (v1)
	Path        string  `json:"path"`      // relative to the hierarchy's mount
	CPUCores    float64 `json:"cpu_cores,omitempty"`
	MemoryBytes uint64  `json:"memory_bytes,omitempty"`
}

// cgroupFiles locates the files the agent reads, so tests run on fixture trees.
type cgroupFiles struct {
	procCgroup string // /proc/self/cgroup
	mount      string // /sys/fs/cgroup
}

// errNoCgroup is returned when the process is in no cgroup with a CPU or
// memory controller (not Linux, or no cgroup filesystem).
var errNoCgroup = cgroupfs.ErrNoCgroup

// readLimits reads the process's cgroup limits through cgroupfs, the reader
// collect uses for its targets. Errors reading single files are joined into
// the error while the rest is still returned.
func readLimits(f cgroupFiles) (*Limits, error) {
	b, err := cgroupfs.ReadSmall(f.procCgroup)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, errNoCgroup
		}
		return nil, err
	}
	r, err := cgroupfs.Read(f.mount, cgroupfs.ParseMembership(b))
	if r == nil {
		return nil, err
	}
	l := &Limits{Version: r.Version, Path: r.Path}
	for _, lv := range r.Levels {
		l.Levels = append(l.Levels, Level{Hierarchy: lv.Hierarchy, Path: lv.Path, CPUCores: lv.CPUCores, MemoryBytes: lv.MemoryBytes})
	}
	l.CPUCores, l.CPUFrom = r.EffectiveCPU()
	l.MemoryBytes, l.MemoryFrom = r.EffectiveMemory()
	return l, err
}

// leafCPUCores is the CPU limit of the process's own cgroup alone: what the
// Go runtime (1.25+) reads for its GOMAXPROCS default.
func (l *Limits) leafCPUCores() float64 {
	for _, lv := range l.Levels {
		if lv.Hierarchy == "unified" || lv.Hierarchy == "cpu" {
			return lv.CPUCores // the first such level is the leaf
		}
	}
	return 0
}

// ceilCores rounds a CPU limit up the way the runtime does for its default.
func ceilCores(c float64) int { return int(math.Ceil(c - 1e-9)) }
