package agent

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

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
var errNoCgroup = errors.New("no cgroup with a cpu or memory controller")

// readLimits reads the process's cgroup limits. Errors reading single files
// are joined into the error while the rest is still returned.
func readLimits(f cgroupFiles) (*Limits, error) {
	b, err := readSmall(f.procCgroup)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, errNoCgroup
		}
		return nil, err
	}
	var cpuPath, memPath, v2Path string
	var v1, v2 bool
	for _, line := range strings.Split(string(b), "\n") {
		parts := strings.SplitN(strings.TrimSpace(line), ":", 3)
		if len(parts) != 3 {
			continue
		}
		if parts[0] == "0" && parts[1] == "" {
			v2, v2Path = true, parts[2]
			continue
		}
		for _, ctl := range strings.Split(parts[1], ",") {
			switch ctl {
			case "cpu":
				v1, cpuPath = true, parts[2]
			case "memory":
				v1, memPath = true, parts[2]
			}
		}
	}
	// Hybrid systems list both; there the controllers live on v1.
	switch {
	case v1:
		return readV1(f.mount, cpuPath, memPath)
	case v2:
		return readV2(f.mount, v2Path)
	}
	return nil, errNoCgroup
}

func readV2(mount, path string) (*Limits, error) {
	l := &Limits{Version: 2, Path: path}
	var errs []error
	leaf := cgroupfs.ResolveDir(mount, path)
	for dir := range cgroupfs.Ancestors(mount, leaf) {
		lv := Level{Hierarchy: "unified", Path: relPath(mount, dir)}
		if b, err := readSmall(filepath.Join(dir, "cpu.max")); err == nil {
			if lv.CPUCores, err = cgroupfs.ParseCPUMax(b); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", filepath.Join(dir, "cpu.max"), err))
			}
		} else if !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
		if b, err := readSmall(filepath.Join(dir, "memory.max")); err == nil {
			if lv.MemoryBytes, err = parseLimitBytes(b); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", filepath.Join(dir, "memory.max"), err))
			}
		} else if !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
		l.add(lv)
	}
	return l, errors.Join(errs...)
}

func readV1(base, cpuPath, memPath string) (*Limits, error) {
	l := &Limits{Version: 1, Path: cgroupfs.V1Label(cpuPath, memPath)}
	var errs []error
	if cpuPath != "" {
		if mount, err := cgroupfs.V1Mount(base, "cpu"); err != nil {
			errs = append(errs, err)
		} else {
			for dir := range cgroupfs.Ancestors(mount, cgroupfs.ResolveDir(mount, cpuPath)) {
				lv := Level{Hierarchy: "cpu", Path: relPath(mount, dir)}
				quota, err := readInt(filepath.Join(dir, "cpu.cfs_quota_us"))
				if err == nil {
					var period int64
					if period, err = readInt(filepath.Join(dir, "cpu.cfs_period_us")); err == nil && quota > 0 && period > 0 {
						lv.CPUCores = float64(quota) / float64(period) // quota -1: none
					}
				}
				if err != nil && !errors.Is(err, fs.ErrNotExist) {
					errs = append(errs, err)
				}
				l.add(lv)
			}
		}
	}
	if memPath != "" {
		if mount, err := cgroupfs.V1Mount(base, "memory"); err != nil {
			errs = append(errs, err)
		} else {
			for dir := range cgroupfs.Ancestors(mount, cgroupfs.ResolveDir(mount, memPath)) {
				lv := Level{Hierarchy: "memory", Path: relPath(mount, dir)}
				p := filepath.Join(dir, "memory.limit_in_bytes")
				if b, err := readSmall(p); err == nil {
					if lv.MemoryBytes, err = parseLimitBytes(b); err != nil {
						errs = append(errs, fmt.Errorf("%s: %w", p, err))
					}
				} else if !errors.Is(err, fs.ErrNotExist) {
					errs = append(errs, err)
				}
				l.add(lv)
			}
		}
	}
	return l, errors.Join(errs...)
}

// add records a level and keeps the smallest limits.
func (l *Limits) add(lv Level) {
	l.Levels = append(l.Levels, lv)
	if lv.CPUCores > 0 && (l.CPUCores == 0 || lv.CPUCores < l.CPUCores) {
		l.CPUCores, l.CPUFrom = lv.CPUCores, lv.Path
	}
	if lv.MemoryBytes > 0 && (l.MemoryBytes == 0 || lv.MemoryBytes < l.MemoryBytes) {
		l.MemoryBytes, l.MemoryFrom = lv.MemoryBytes, lv.Path
	}
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

func relPath(mount, dir string) string {
	r, err := filepath.Rel(mount, dir)
	if err != nil || r == "." {
		return "/"
	}
	return "/" + filepath.ToSlash(r)
}

// readSmall reads a cgroup or proc file, which is a few lines long.
func readSmall(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, 64<<10))
}

func readInt(path string) (int64, error) {
	b, err := readSmall(path)
	if err != nil {
		return 0, err
	}
	v, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", path, err)
	}
	return v, nil
}

// parseLimitBytes parses memory.max or memory.limit_in_bytes. "max" and
// v1's page-aligned MaxInt64 ("unlimited") read as 0, no limit.
func parseLimitBytes(b []byte) (uint64, error) {
	s := strings.TrimSpace(string(b))
	if s == "max" {
		return 0, nil
	}
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("want a number or \"max\": %w", err)
	}
	if v >= 1<<62 {
		return 0, nil
	}
	return v, nil
}

// ceilCores rounds a CPU limit up the way the runtime does for its default.
func ceilCores(c float64) int { return int(math.Ceil(c - 1e-9)) }
