package system

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/prometheus/procfs"

	"github.com/perfdoctor/perfdoctor/bundle"
	"github.com/perfdoctor/perfdoctor/internal/cgroupfs"
)

// readCgroup finds the process's cgroup and reads its CPU and memory limits
// and counters. It returns nil, nil when the process is in no cgroup with a
// CPU or memory controller. Errors reading single files are joined into the
// error while the rest is still returned.
func readCgroup(roots Roots, proc procfs.Proc) (*bundle.CgroupInfo, error) {
	cgs, err := proc.Cgroups()
	if err != nil {
		return nil, err
	}
	base := filepath.Join(roots.Sys, "fs", "cgroup")
	var (
		cpuPath, memPath, v2Path string
		v1, v2                   bool
	)
	for _, c := range cgs {
		if c.HierarchyID == 0 && len(c.Controllers) == 0 {
			v2, v2Path = true, c.Path
		}
		for _, ctl := range c.Controllers {
			switch ctl {
			case "cpu":
				v1, cpuPath = true, c.Path
			case "memory":
				v1, memPath = true, c.Path
			}
		}
	}
	// Hybrid systems list both; there the controllers live on v1 and the
	// unified hierarchy only tracks processes.
	switch {
	case v1:
		return readCgroupV1(base, cpuPath, memPath)
	case v2:
		return readCgroupV2(base, v2Path)
	}
	return nil, nil
}

func readCgroupV2(base, path string) (*bundle.CgroupInfo, error) {
	info := &bundle.CgroupInfo{Version: 2, Path: path}
	var errs []error
	leaf := cgroupfs.ResolveDir(base, path)
	// Limits set on an ancestor (a Kubernetes pod, a systemd slice) bind too:
	// the effective limit is the smallest on the way up.
	for dir := range cgroupfs.Ancestors(base, leaf) {
		if q, err := readWith(filepath.Join(dir, "cpu.max"), parseCPUMax); err == nil {
			info.CPUQuotaCores = minLimit(info.CPUQuotaCores, q)
		} else if !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
		if m, err := readWith(filepath.Join(dir, "memory.max"), parseCgroupValue); err == nil {
			info.MemoryLimitBytes = minLimit(info.MemoryLimitBytes, m)
		} else if !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	if v, err := readWith(filepath.Join(leaf, "memory.current"), parseCgroupValue); err == nil {
		info.MemoryUsageBytes = v
	} else if !errors.Is(err, fs.ErrNotExist) {
		errs = append(errs, err)
	}
	if st, err := readWith(filepath.Join(leaf, "cpu.stat"), parseCPUStat); err == nil {
		info.NrPeriods, info.NrThrottled, info.ThrottledUsec = st.NrPeriods, st.NrThrottled, st.ThrottledUsec
	} else if !errors.Is(err, fs.ErrNotExist) {
		errs = append(errs, err)
	}
	return info, errors.Join(errs...)
}

func readCgroupV1(base, cpuPath, memPath string) (*bundle.CgroupInfo, error) {
	info := &bundle.CgroupInfo{Version: 1, Path: cgroupfs.V1Label(cpuPath, memPath)}
	var errs []error
	if cpuPath != "" {
		if mount, err := cgroupfs.V1Mount(base, "cpu"); err != nil {
			errs = append(errs, err)
		} else {
			leaf := cgroupfs.ResolveDir(mount, cpuPath)
			for dir := range cgroupfs.Ancestors(mount, leaf) {
				quota, err := readWith(filepath.Join(dir, "cpu.cfs_quota_us"), parseCgroupInt)
				if err != nil {
					if !errors.Is(err, fs.ErrNotExist) {
						errs = append(errs, err)
					}
					continue
				}
				period, err := readWith(filepath.Join(dir, "cpu.cfs_period_us"), parseCgroupInt)
				if err != nil {
					errs = append(errs, err)
					continue
				}
				if quota > 0 && period > 0 { // quota -1 means none
					info.CPUQuotaCores = minLimit(info.CPUQuotaCores, float64(quota)/float64(period))
				}
			}
			if st, err := readWith(filepath.Join(leaf, "cpu.stat"), parseCPUStat); err == nil {
				info.NrPeriods, info.NrThrottled, info.ThrottledUsec = st.NrPeriods, st.NrThrottled, st.ThrottledUsec
			} else if !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, err)
			}
		}
	}
	if memPath != "" {
		if mount, err := cgroupfs.V1Mount(base, "memory"); err != nil {
			errs = append(errs, err)
		} else {
			leaf := cgroupfs.ResolveDir(mount, memPath)
			for dir := range cgroupfs.Ancestors(mount, leaf) {
				if m, err := readWith(filepath.Join(dir, "memory.limit_in_bytes"), parseCgroupValue); err == nil {
					info.MemoryLimitBytes = minLimit(info.MemoryLimitBytes, m)
				} else if !errors.Is(err, fs.ErrNotExist) {
					errs = append(errs, err)
				}
			}
			if v, err := readWith(filepath.Join(leaf, "memory.usage_in_bytes"), parseCgroupValue); err == nil {
				info.MemoryUsageBytes = v
			} else if !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, err)
			}
		}
	}
	return info, errors.Join(errs...)
}

// minLimit combines limits where 0 means none.
func minLimit[T uint64 | float64](a, b T) T {
	switch {
	case a == 0:
		return b
	case b == 0:
		return a
	}
	return min(a, b)
}

// maxCgroupFile bounds reads of cgroup files, which are a few lines long.
const maxCgroupFile = 64 << 10

// readWith opens path and parses it, naming the file in errors.
func readWith[T any](path string, parse func(io.Reader) (T, error)) (T, error) {
	f, err := os.Open(path)
	if err != nil {
		var zero T
		return zero, err
	}
	defer f.Close()
	v, err := parse(io.LimitReader(f, maxCgroupFile))
	if err != nil {
		return v, fmt.Errorf("%s: %w", path, err)
	}
	return v, nil
}

// parseCPUMax reads cgroup v2 cpu.max into cores (cgroupfs.ParseCPUMax).
func parseCPUMax(r io.Reader) (float64, error) {
	b, err := io.ReadAll(r)
	if err != nil {
		return 0, err
	}
	return cgroupfs.ParseCPUMax(b)
}

// v1Unlimited: cgroup v1 shows "no limit" as the largest page-aligned int64
// (9223372036854771712 with 4 KiB pages); anything this large is no limit.
const v1Unlimited = 1 << 62

// parseCgroupValue parses a one-number cgroup file (memory.max,
// memory.current, memory.limit_in_bytes, ...). "max" and v1's huge
// "unlimited" value read as 0, meaning no limit.
func parseCgroupValue(r io.Reader) (uint64, error) {
	b, err := io.ReadAll(r)
	if err != nil {
		return 0, err
	}
	s := strings.TrimSpace(string(b))
	if s == "max" {
		return 0, nil
	}
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("want a number or \"max\": %w", err)
	}
	if v >= v1Unlimited {
		return 0, nil
	}
	return v, nil
}

// parseCgroupInt parses a one-number file that may be negative
// (cpu.cfs_quota_us is -1 without a quota).
func parseCgroupInt(r io.Reader) (int64, error) {
	b, err := io.ReadAll(r)
	if err != nil {
		return 0, err
	}
	v, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("want a number: %w", err)
	}
	return v, nil
}

// cpuStat holds the throttling counters of cpu.stat.
type cpuStat struct {
	NrPeriods, NrThrottled, ThrottledUsec uint64
}

// parseCPUStat parses cpu.stat "key value" lines, v2 (throttled_usec) or v1
// (throttled_time in nanoseconds). Unknown keys are ignored.
func parseCPUStat(r io.Reader) (cpuStat, error) {
	var st cpuStat
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		k, v, ok := strings.Cut(strings.TrimSpace(sc.Text()), " ")
		if !ok {
			continue
		}
		var dst *uint64
		scale := uint64(1)
		switch k {
		case "nr_periods":
			dst = &st.NrPeriods
		case "nr_throttled":
			dst = &st.NrThrottled
		case "throttled_usec":
			dst = &st.ThrottledUsec
		case "throttled_time":
			dst, scale = &st.ThrottledUsec, 1000
		default:
			continue
		}
		n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
		if err != nil {
			return st, fmt.Errorf("cpu.stat %s: %w", k, err)
		}
		*dst = n / scale
	}
	if err := sc.Err(); err != nil {
		return st, fmt.Errorf("cpu.stat: %w", err)
	}
	return st, nil
}
