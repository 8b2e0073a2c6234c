package system

import (
	"errors"
	"path/filepath"
	"strconv"

	"github.com/prometheus/procfs"

	"github.com/perfdoctor/perfdoctor/bundle"
	"github.com/perfdoctor/perfdoctor/internal/cgroupfs"
)

// readCgroup reads the process's cgroup limits and counters through
// cgroupfs, the reader the agent uses for itself. It returns nil, nil when
// the process is in no cgroup with a CPU or memory controller. Errors
// reading single files are joined into the error while the rest is still
// returned.
func readCgroup(roots Roots, proc procfs.Proc) (*bundle.CgroupInfo, error) {
	b, err := cgroupfs.ReadSmall(filepath.Join(roots.Proc, strconv.Itoa(proc.PID), "cgroup"))
	if err != nil {
		return nil, err
	}
	r, err := cgroupfs.Read(filepath.Join(roots.Sys, "fs", "cgroup"), cgroupfs.ParseMembership(b))
	if errors.Is(err, cgroupfs.ErrNoCgroup) {
		return nil, nil
	}
	if r == nil {
		return nil, err
	}
	info := &bundle.CgroupInfo{Version: r.Version, Path: r.Path, MemoryUsageBytes: r.MemoryUsageBytes,
		NrPeriods: r.Throttling.NrPeriods, NrThrottled: r.Throttling.NrThrottled, ThrottledUsec: r.Throttling.ThrottledUsec}
	info.CPUQuotaCores, _ = r.EffectiveCPU()
	info.MemoryLimitBytes, _ = r.EffectiveMemory()
	return info, err
}
