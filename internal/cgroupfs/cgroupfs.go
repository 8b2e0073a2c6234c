// Package cgroupfs is the one cgroup reader: it finds a process's cgroups
// (v1 or v2) from /proc/PID/cgroup, walks from its cgroup up to the mount
// reading each level's CPU and memory limits, and reads the leaf's usage and
// throttling (Read). collect/system reads a target with it and the agent
// reads itself; it depends on nothing but the standard library, so the
// agent stays light.
package cgroupfs

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// ResolveDir maps a path from /proc/PID/cgroup to a directory under mount.
// Inside a container without a cgroup namespace the path names the host's
// hierarchy while the mount shows only the container's subtree, so leading
// components are dropped until a directory exists.
func ResolveDir(mount, path string) string {
	clean := strings.Trim(filepath.Clean("/"+path), "/") // no escaping mount with ".."
	if clean == "" {
		return mount
	}
	parts := strings.Split(clean, "/")
	for i := range parts {
		if d := filepath.Join(mount, filepath.Join(parts[i:]...)); IsDir(d) {
			return d
		}
	}
	return mount
}

// Ancestors yields leaf and its parents up to and including mount.
func Ancestors(mount, leaf string) func(func(string) bool) {
	return func(yield func(string) bool) {
		for dir := leaf; ; dir = filepath.Dir(dir) {
			if !yield(dir) || dir == mount || len(dir) <= len(mount) {
				return
			}
		}
	}
}

// IsDir reports whether p is a directory.
func IsDir(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.IsDir()
}

// V1Label names a v1 process's cgroup: its cpu path, else its memory path,
// or both when they differ.
func V1Label(cpuPath, memPath string) string {
	switch {
	case cpuPath == "":
		return memPath
	case memPath != "" && memPath != cpuPath:
		return "cpu:" + cpuPath + ",memory:" + memPath
	}
	return cpuPath
}

// v1MountNames are the directory names a v1 controller is mounted under:
// cpu is often co-mounted with cpuacct.
var v1MountNames = map[string][]string{
	"cpu":    {"cpu", "cpu,cpuacct", "cpuacct,cpu"},
	"memory": {"memory"},
}

// V1Mount is the mount of a v1 controller ("cpu" or "memory") under base.
func V1Mount(base, controller string) (string, error) {
	for _, name := range v1MountNames[controller] {
		if d := filepath.Join(base, name); IsDir(d) {
			return d, nil
		}
	}
	return "", fmt.Errorf("cgroup v1 %s controller not mounted under %s", controller, base)
}

// ParseCPUMax parses cgroup v2 cpu.max, "$QUOTA $PERIOD" in microseconds or
// "max $PERIOD", into cores; 0 means no limit.
func ParseCPUMax(b []byte) (float64, error) {
	f := strings.Fields(string(b))
	if len(f) == 0 || len(f) > 2 {
		return 0, fmt.Errorf("cpu.max: want \"QUOTA PERIOD\", got %.40q", b)
	}
	if f[0] == "max" {
		return 0, nil
	}
	quota, err := strconv.ParseUint(f[0], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("cpu.max quota: %w", err)
	}
	period := uint64(100000) // the kernel default when only a quota is shown
	if len(f) == 2 {
		if period, err = strconv.ParseUint(f[1], 10, 64); err != nil {
			return 0, fmt.Errorf("cpu.max period: %w", err)
		}
	}
	if period == 0 {
		return 0, fmt.Errorf("cpu.max: zero period")
	}
	return float64(quota) / float64(period), nil
}
