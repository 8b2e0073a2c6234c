package cgroupfs

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
)

// Membership is where a process sits in the cgroup hierarchies, from
// /proc/PID/cgroup.
type Membership struct {
	V1CPU, V1Memory string // v1 paths of the cpu and memory controllers
	V2              string // the unified hierarchy's path
	HasV1, HasV2    bool
}

// ParseMembership reads /proc/PID/cgroup: "ID:CONTROLLERS:PATH" lines, v2's
// being "0::PATH".
func ParseMembership(b []byte) Membership {
	var m Membership
	for _, line := range strings.Split(string(b), "\n") {
		parts := strings.SplitN(strings.TrimSpace(line), ":", 3)
		if len(parts) != 3 {
			continue
		}
		if parts[0] == "0" && parts[1] == "" {
			m.HasV2, m.V2 = true, parts[2]
			continue
		}
		for _, ctl := range strings.Split(parts[1], ",") {
			switch ctl {
			case "cpu":
				m.HasV1, m.V1CPU = true, parts[2]
			case "memory":
				m.HasV1, m.V1Memory = true, parts[2]
			}
		}
	}
	return m
}

// Level is one cgroup on the way from the process up to the root, with the
// limits it sets itself (zero: none).
type Level struct {
	Hierarchy   string // "unified" (v2), "cpu" or "memory" (v1)
	Path        string // relative to the hierarchy's mount
	CPUCores    float64
	MemoryBytes uint64
}

// Reading is what the cgroup filesystem says about one process.
type Reading struct {
	Version int    // 1 or 2
	Path    string // the process's cgroup (v1: its cpu path, else memory, or both)
	// Levels lists every cgroup read on the way up, leaf first per hierarchy.
	Levels []Level
	// The leaf's counters.
	MemoryUsageBytes uint64
	Throttling       CPUStat
}

// ErrNoCgroup is returned when the process is in no cgroup with a CPU or
// memory controller.
var ErrNoCgroup = errors.New("no cgroup with a cpu or memory controller")

// Read walks the process's cgroups under base (/sys/fs/cgroup): limits at
// every level up to the mount, usage and throttling at the leaf. Limits set
// on an ancestor (a Kubernetes pod, a systemd slice) bind too. On hybrid
// systems, which list both, the controllers live on v1. Errors reading
// single files are joined into the error while the rest is still returned.
func Read(base string, m Membership) (*Reading, error) {
	switch {
	case m.HasV1:
		return readV1(base, m.V1CPU, m.V1Memory)
	case m.HasV2:
		return readV2(base, m.V2)
	}
	return nil, ErrNoCgroup
}

// EffectiveCPU is the smallest CPU limit on the way up and the level that set it.
func (r *Reading) EffectiveCPU() (cores float64, from string) {
	for _, lv := range r.Levels {
		if lv.CPUCores > 0 && (cores == 0 || lv.CPUCores < cores) {
			cores, from = lv.CPUCores, lv.Path
		}
	}
	return cores, from
}

// EffectiveMemory is the smallest memory limit on the way up and the level that set it.
func (r *Reading) EffectiveMemory() (bytes uint64, from string) {
	for _, lv := range r.Levels {
		if lv.MemoryBytes > 0 && (bytes == 0 || lv.MemoryBytes < bytes) {
			bytes, from = lv.MemoryBytes, lv.Path
		}
	}
	return bytes, from
}

// errs collects the errors worth reporting: a missing file is only absent.
type errs []error

func (e *errs) add(err error) {
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		*e = append(*e, err)
	}
}

func readV2(mount, path string) (*Reading, error) {
	r := &Reading{Version: 2, Path: path}
	var es errs
	leaf := ResolveDir(mount, path)
	for dir := range Ancestors(mount, leaf) {
		lv := Level{Hierarchy: "unified", Path: relPath(mount, dir)}
		var err error
		lv.CPUCores, err = readWith(filepath.Join(dir, "cpu.max"), ParseCPUMax)
		es.add(err)
		lv.MemoryBytes, err = readWith(filepath.Join(dir, "memory.max"), ParseValue)
		es.add(err)
		r.Levels = append(r.Levels, lv)
	}
	var err error
	r.MemoryUsageBytes, err = readWith(filepath.Join(leaf, "memory.current"), ParseValue)
	es.add(err)
	r.Throttling, err = readWith(filepath.Join(leaf, "cpu.stat"), ParseCPUStat)
	es.add(err)
	return r, errors.Join(es...)
}

func readV1(base, cpuPath, memPath string) (*Reading, error) {
	r := &Reading{Version: 1, Path: V1Label(cpuPath, memPath)}
	var es errs
	if cpuPath != "" {
		if mount, err := V1Mount(base, "cpu"); err != nil {
			es.add(err)
		} else {
			leaf := ResolveDir(mount, cpuPath)
			for dir := range Ancestors(mount, leaf) {
				lv := Level{Hierarchy: "cpu", Path: relPath(mount, dir)}
				quota, err := readWith(filepath.Join(dir, "cpu.cfs_quota_us"), ParseInt)
				if err == nil {
					var period int64
					if period, err = readWith(filepath.Join(dir, "cpu.cfs_period_us"), ParseInt); err == nil && quota > 0 && period > 0 {
						lv.CPUCores = float64(quota) / float64(period) // quota -1: none
					}
				}
				es.add(err)
				r.Levels = append(r.Levels, lv)
			}
			var err error
			r.Throttling, err = readWith(filepath.Join(leaf, "cpu.stat"), ParseCPUStat)
			es.add(err)
		}
	}
	if memPath != "" {
		if mount, err := V1Mount(base, "memory"); err != nil {
			es.add(err)
		} else {
			leaf := ResolveDir(mount, memPath)
			for dir := range Ancestors(mount, leaf) {
				lv := Level{Hierarchy: "memory", Path: relPath(mount, dir)}
				var err error
				lv.MemoryBytes, err = readWith(filepath.Join(dir, "memory.limit_in_bytes"), ParseValue)
				es.add(err)
				r.Levels = append(r.Levels, lv)
			}
			var err error
			r.MemoryUsageBytes, err = readWith(filepath.Join(leaf, "memory.usage_in_bytes"), ParseValue)
			es.add(err)
		}
	}
	return r, errors.Join(es...)
}

func relPath(mount, dir string) string {
	r, err := filepath.Rel(mount, dir)
	if err != nil || r == "." {
		return "/"
	}
	return "/" + filepath.ToSlash(r)
}

// maxFile bounds reads of cgroup files, which are a few lines long.
const maxFile = 64 << 10

// ReadSmall reads a cgroup or proc file, which is a few lines long.
func ReadSmall(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, maxFile))
}

// readWith reads path and parses it, naming the file in errors.
func readWith[T any](path string, parse func([]byte) (T, error)) (T, error) {
	b, err := ReadSmall(path)
	if err != nil {
		var zero T
		return zero, err
	}
	v, err := parse(b)
	if err != nil {
		return v, fmt.Errorf("%s: %w", path, err)
	}
	return v, nil
}

// v1Unlimited: cgroup v1 shows "no limit" as the largest page-aligned int64
// (9223372036854771712 with 4 KiB pages); anything this large is no limit.
const v1Unlimited = 1 << 62

// ParseValue parses a one-number cgroup file (memory.max, memory.current,
// memory.limit_in_bytes, ...). "max" and v1's huge "unlimited" value read
// as 0, meaning no limit.
func ParseValue(b []byte) (uint64, error) {
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

// ParseInt parses a one-number file that may be negative
// (cpu.cfs_quota_us is -1 without a quota).
func ParseInt(b []byte) (int64, error) {
	v, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("want a number: %w", err)
	}
	return v, nil
}

// CPUStat holds the throttling counters of cpu.stat.
type CPUStat struct {
	NrPeriods, NrThrottled, ThrottledUsec uint64
}

// ParseCPUStat parses cpu.stat "key value" lines, v2 (throttled_usec) or v1
// (throttled_time in nanoseconds). Unknown keys are ignored.
func ParseCPUStat(b []byte) (CPUStat, error) {
	var st CPUStat
	sc := bufio.NewScanner(strings.NewReader(string(b)))
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
